/**
 * Plugin metadata the way `fastify-plugin` attaches it, for a gateway that
 * does not depend on that package: Fastify itself reads these three symbols.
 * `skip-override` (unless `encapsulate`) makes the plugin's decorators, hooks
 * and handlers land in the parent's context, visible to its siblings; the
 * name and `dependencies`/`decorators` make a wrong registration order fail
 * at boot instead of at the first request.
 *
 * The signature is fastify-plugin's `fp(fn, options)`: once that package is a
 * dependency, this file becomes `export { default as definePlugin } from "fastify-plugin";`.
 */
import type { FastifyPluginAsync, FastifyPluginOptions } from "fastify";

export interface PluginMeta {
  name: string;
  /** Semver range of Fastify the plugin is written for. */
  fastify?: string;
  /** Plugin names that must be registered before this one. */
  dependencies?: string[];
  /** Decorators that must exist before this one loads. */
  decorators?: { fastify?: string[]; request?: string[]; reply?: string[] };
  /** Keep the plugin's own context (routes, private decorators) while still naming it. */
  encapsulate?: boolean;
}

export function definePlugin<Options extends FastifyPluginOptions>(
  plugin: FastifyPluginAsync<Options>,
  meta: PluginMeta,
): FastifyPluginAsync<Options> {
  const tagged = plugin as FastifyPluginAsync<Options> & Record<symbol, unknown>;
  tagged[Symbol.for("skip-override")] = meta.encapsulate !== true;
  tagged[Symbol.for("fastify.display-name")] = meta.name;
  tagged[Symbol.for("plugin-meta")] = meta;
  return plugin;
}
