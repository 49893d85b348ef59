/**
 * `startNode`, as the package exports it: a node (src/main/start-node.ts) whose HTTP API is this
 * layer's server. The main thread knows HTTP only as the `FrontDoor` it is given. The server's
 * code is loaded when the port is bound, after the node's worker threads have begun to start.
 */
import { startNodeWith } from '../main/start-node.js';
import type { FrontDoor, KeepworkNode, StartNodeOptions } from '../main/node-api.js';

const frontDoor: FrontDoor = async (settings) => (await import('./server.js')).startHttp(settings);

export function startNode(options: StartNodeOptions): Promise<KeepworkNode> {
  return startNodeWith(options, frontDoor);
}
