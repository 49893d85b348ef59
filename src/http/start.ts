/**
 * `startNode`, as the package exports it: a node (src/main/start-node.ts) whose HTTP API is this
 * layer's server. The main thread knows HTTP only as the `FrontDoor` it is given.
 */
import { startNodeWith } from '../main/start-node.js';
import type { KeepworkNode, StartNodeOptions } from '../main/node-api.js';
import { startHttp } from './server.js';

export function startNode(options: StartNodeOptions): Promise<KeepworkNode> {
  return startNodeWith(options, startHttp);
}
