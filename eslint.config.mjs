import js from "@eslint/js";
import tseslint from "typescript-eslint";

/** No Pulumi and no components in the pure layers: they run in synth and unit tests without an engine. */
const NO_PULUMI = [
  { group: ["@pulumi/*"], message: "pure layer: no Pulumi here (components/ turn plans into resources)" },
  { group: ["**/components", "**/components/*"], message: "pure layer: components/ depend on it, not the reverse" },
];
/** config/ is engine-free so synth and the unit tests validate a stack without Pulumi; config/loader.ts is the exception. */
const NO_PULUMI_IN_CONFIG = [
  {
    group: ["@pulumi/*"],
    message: "no Pulumi in config/ outside config/loader.ts: synth and the tests parse and validate without the engine",
  },
  { group: ["**/components", "**/components/*"], message: "config/ is read by components/, not the reverse" },
];
/** Module paths of the folders below another one, for the layering rules. */
const folder = (name, why) => ({ group: [`**/${name}`, `**/${name}/*`], message: why });

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
  // Layering (docs/architecture.md "Data path: one plan"): facts (catalog, model) <- render <- plan <- cloud, synth <- components <- program;
  // config/ (schema, types) is read by render and plan, config/validate/ reads the plan, config/loader.ts feeds program.
  {
    files: ["infra/catalog/**/*.ts", "infra/model/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            ...NO_PULUMI,
            folder("plan", "facts do not depend on the plan"),
            folder("render", "facts do not depend on the renderers"),
            folder("synth", "facts do not depend on synth"),
            folder("cloud", "facts do not depend on cloud documents"),
          ],
        },
      ],
    },
  },
  {
    files: ["infra/render/**/*.ts"],
    rules: {
      // The typescript-eslint variant, for allowTypeImports: a renderer names the plan's types (WorkloadPlan,
      // AutoscalingPlan live in plan/) but never runs plan code.
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            ...NO_PULUMI,
            {
              ...folder("plan", "renderers take their inputs as arguments; the plan calls them, not the reverse"),
              allowTypeImports: true,
            },
            folder("synth", "renderers do not depend on synth"),
            folder("cloud", "renderers do not depend on cloud documents"),
          ],
        },
      ],
    },
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
          patterns: [
            ...NO_PULUMI,
            folder("synth", "the plan does not depend on synth"),
            folder("cloud", "the plan does not depend on cloud documents"),
          ],
        },
      ],
    },
  },
  {
    files: ["infra/synth/**/*.ts", "infra/cloud/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: NO_PULUMI }] },
  },
  // config/: the schema, the resolved stack's types and the rule helpers sit below the plan (the plan and the
  // renderers read them). Pulumi only in the loader, the one file that reads config through the engine.
  {
    files: ["infra/config/**/*.ts"],
    ignores: ["infra/config/loader.ts", "infra/config/validate/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            ...NO_PULUMI_IN_CONFIG,
            folder("plan", "the config sits below the plan; checks that need the plan live in config/validate/"),
            folder("render", "the config sits below the renderers; checks that need them live in config/validate/"),
            folder("synth", "the config does not depend on synth"),
            folder("cloud", "the config does not depend on cloud documents"),
          ],
        },
      ],
    },
  },
  // config/validate/ sits above the plan (it plans the workload to check that the pods fit), still engine-free.
  {
    files: ["infra/config/validate/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            ...NO_PULUMI_IN_CONFIG,
            folder("synth", "validation does not depend on synth"),
            folder("cloud", "validation does not depend on cloud documents"),
          ],
        },
      ],
    },
  },
);
