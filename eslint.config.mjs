import { readFileSync } from "node:fs";
import js from "@eslint/js";
import tseslint from "typescript-eslint";

/** No Pulumi in the pure layers: they run in synth and unit tests without an engine. */
const NO_PULUMI = [
  { group: ["@pulumi/*"], message: "pure layer: no Pulumi here (components/ turn plans into resources)" },
];

/**
 * The layers of infra/, lowest first (infra/layers.json; docs/architecture.md "Layers"). Each layer's files may not
 * import a module of a higher layer, type imports included; test/unit/architecture.test.ts checks the same on the whole
 * graph (and cycles), this rule flags it in the editor.
 */
const { layers: LAYERS } = JSON.parse(readFileSync(new URL("./infra/layers.json", import.meta.url), "utf8"));
/** Pure layers: up to and including the documents layer (below components). */
const PURE_LAYERS = new Set(["facts", "config", "resolve", "plan", "render", "documents"]);

/** The glob of a layer path's files, for `files`. */
const filesOf = (p) => (p.endsWith("/") ? `infra/${p}**/*.ts` : `infra/${p}`);
/**
 * The module-specifier patterns that name a layer path from another folder of infra/ (`../plan/x`, `../../plan`,
 * `../tags`). A bare same-folder name (`./promotion` in resolve/) is that folder's own file, so it is not matched;
 * the architecture test resolves every import and misses none.
 */
const specifiersOf = (p) => {
  const name = p.endsWith("/") ? p.slice(0, -1) : p.replace(/\.ts$/, "");
  const bare = [`../${name}`, `../../${name}`];
  return p.endsWith("/") ? [...bare, `**/${name}/*`] : bare;
};

const layerRules = LAYERS.map((layer, i) => {
  const above = LAYERS.slice(i + 1);
  return {
    files: layer.paths.map(filesOf),
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: above.map((higher) => ({
            group: higher.paths.flatMap(specifiersOf),
            message: `${layer.name} sits below ${higher.name} (infra/layers.json): no import goes up a layer, type imports included`,
          })),
        },
      ],
    },
  };
});

export default tseslint.config(
  { ignores: ["node_modules/**", "dist/**", "out/**", "**/*.js", "**/*.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  ...layerRules,
  {
    files: LAYERS.filter((l) => PURE_LAYERS.has(l.name)).flatMap((l) => l.paths.map(filesOf)),
    ignores: ["infra/plan/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: NO_PULUMI }] },
  },
  {
    files: ["infra/plan/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [
            { name: "node:fs", message: "the plan never reads files: hash them through the injected PathHasher" },
            { name: "fs", message: "the plan never reads files: hash them through the injected PathHasher" },
          ],
          patterns: NO_PULUMI,
        },
      ],
    },
  },
);
