/**
 * Size and lag of each tenant's alarm index, for `keepwork status`. The listing lives with the
 * other index listings in src/alarms/index-listing.ts (the status page reads it too); this module
 * keeps the operator commands' import.
 */
export { tenantIndexStats, type TenantIndexStats } from '../alarms/index-listing.js';
