/**
 * The gateway's plugins are declared through `fastify-plugin`: it tags a plugin so that Fastify
 * skips its encapsulation (unless `encapsulate`), names it, and checks its `dependencies` and
 * `decorators` at boot, so a wrong registration order fails at start-up rather than at the first
 * request. Re-exported under one name so every plugin file imports it the same way.
 */
export { default as definePlugin } from "fastify-plugin";
