/**
 * The remote build steps as resources: the scripts, images and rendered files
 * shipped with `remote.CopyToRemote`, and one `remote.Command` per step whose
 * triggers are exactly that step's inputs (its input hash plus the deploy-time
 * values its config uses). The graph and the hashes come from the pure step
 * definitions (infra/plan/steps.ts); this component only wires them.
 */
import * as aws from "@pulumi/aws";
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { sha256 } from "../plan/contentHash";
import {
  REMOTE,
  SHIPPED_TREES,
  deployValuesOf,
  renderStepConfig,
  requireImageResult,
  stepCommand,
  stepConfigPath,
  topologicalOrder,
  type DeployValue,
  type GeneratedFile,
  type SecretEnv,
  type StepDefinition,
  type StepId,
} from "../plan/steps";

export interface BuildPipelineArgs {
  steps: StepDefinition[];
  hashes: Record<StepId, string>;
  connection: command.types.input.remote.ConnectionArgs;
  /** The builder instance: its id re-ships everything onto a replaced host. */
  instanceId: pulumi.Input<string>;
  region: pulumi.Input<string>;
  ecrRegistry: pulumi.Input<string>;
  tritonWithFtRepositoryUrl: pulumi.Input<string>;
  serverRepositoryUrl: pulumi.Input<string>;
  secretEnv: Partial<Record<SecretEnv, pulumi.Output<string>>>;
  stopBuilderWhenDone: boolean;
}

/** The image each image-producing step pushes, as an output. */
const IMAGE_OUTPUT: Partial<Record<StepId, "tritonWithFtImage" | "serverImage">> = {
  "triton-with-ft": "tritonWithFtImage",
  bake: "serverImage",
};

export class BuildPipeline extends pulumi.ComponentResource {
  readonly commands: Record<StepId, command.remote.Command>;
  /** Digest-pinned triton_with_ft reference printed by its step. */
  readonly tritonWithFtImage: pulumi.Output<string>;
  /** Digest-pinned server image reference printed by the bake step. */
  readonly serverImage: pulumi.Output<string>;

  constructor(name: string, args: BuildPipelineArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:buildPipeline:BuildPipeline", name, {}, opts);
    const parent = { parent: this };
    const conn = args.connection;

    // One hash over every step: it moves exactly when some step has to run again.
    const allInputs = sha256(JSON.stringify(args.hashes));

    // Stopped by a previous run: start it before anything needs SSH. The trigger
    // replaces (re-creates) this resource only when a step's inputs changed, so
    // an unchanged stack leaves a stopped builder stopped.
    const running = args.stopBuilderWhenDone
      ? new aws.ec2transitgateway.InstanceState(
          `${name}-running`,
          { instanceId: args.instanceId, state: "running" },
          { ...parent, replacementTrigger: allInputs, ignoreChanges: ["state"] },
        )
      : undefined;

    // /opt is root's; the copies below run as the SSH user.
    const prepare = new command.remote.Command(
      `${name}-prepare`,
      {
        connection: conn,
        create: `sudo install -d -o "$(id -un)" -g "$(id -gn)" -m 0755 ${REMOTE.root} ${REMOTE.scripts} ${REMOTE.steps} ${REMOTE.plan}`,
        triggers: [args.instanceId],
        addPreviousOutputInEnv: false,
      },
      { ...parent, dependsOn: running ? [running] : [], customTimeouts: { create: "30m", update: "30m" } },
    );

    const trees = new Map<string, command.remote.CopyToRemote>();
    for (const t of SHIPPED_TREES) {
      trees.set(
        t.local,
        new command.remote.CopyToRemote(
          `${name}-ship-${t.local.replace(/\//g, "-")}`,
          {
            connection: conn,
            source: new pulumi.asset.FileArchive(t.local),
            remotePath: t.remoteParent,
            triggers: [args.instanceId],
          },
          { ...parent, dependsOn: [prepare] },
        ),
      );
    }

    // Rendered files, shipped once each even when several steps read them.
    const fileCopies = new Map<string, command.remote.CopyToRemote>();
    const shipFile = (f: GeneratedFile) => {
      const existing = fileCopies.get(f.remotePath);
      if (existing) return existing;
      const copy = new command.remote.CopyToRemote(
        `${name}-file-${f.remotePath.slice(REMOTE.root.length + 1).replace(/[^A-Za-z0-9]+/g, "-")}`,
        {
          connection: conn,
          source: new pulumi.asset.StringAsset(f.content),
          remotePath: f.remotePath,
          triggers: [args.instanceId],
        },
        { ...parent, dependsOn: [prepare] },
      );
      fileCopies.set(f.remotePath, copy);
      return copy;
    };

    const deployValues: Partial<Record<DeployValue, pulumi.Output<string>>> = {
      awsRegion: pulumi.output(args.region),
      ecrRegistry: pulumi.output(args.ecrRegistry),
      tritonWithFtRepositoryUrl: pulumi.output(args.tritonWithFtRepositoryUrl),
      serverRepositoryUrl: pulumi.output(args.serverRepositoryUrl),
      // tritonWithFtImage joins once its step exists; topological order puts it before its consumers.
    };
    const deployValue = (step: StepId, v: DeployValue): pulumi.Output<string> => {
      const value = deployValues[v];
      if (!value) throw new Error(`build step ${step} uses ${v} before the step that produces it`);
      return value;
    };

    const commands = {} as Record<StepId, command.remote.Command>;
    const images: Partial<Record<"tritonWithFtImage" | "serverImage", pulumi.Output<string>>> = {};
    for (const step of topologicalOrder(args.steps)) {
      const used = deployValuesOf(step);
      const usedValues = pulumi.all(used.map((v) => deployValue(step.id, v)));
      const configText = usedValues.apply((vals) => {
        const byName = Object.fromEntries(used.map((v, i) => [v, vals[i] ?? ""])) as Record<DeployValue, string>;
        return renderStepConfig(step, (v) => byName[v]);
      });
      // Written through stdin rather than CopyToRemote: the content holds values
      // (repository URLs, the triton_with_ft digest) that are unknown during a
      // first preview, and CopyToRemote refuses an unknown source there.
      const path = stepConfigPath(step.id);
      const configWrite = new command.remote.Command(
        `${name}-config-${step.id}`,
        {
          connection: conn,
          create: `set -eu; umask 022; tmp=$(mktemp ${path}.XXXXXX); cat > "$tmp"; mv -f "$tmp" ${path}`,
          stdin: configText,
          triggers: [args.instanceId],
          addPreviousOutputInEnv: false,
        },
        { ...parent, dependsOn: [prepare] },
      );
      const environment: Record<string, pulumi.Output<string>> = {};
      for (const key of step.secretEnv) {
        const value = args.secretEnv[key];
        if (value) environment[key] = pulumi.secret(value);
      }
      const cmd = new command.remote.Command(
        `${name}-${step.id}`,
        {
          connection: conn,
          create: stepCommand(step),
          // Exactly the step's inputs: its hash, then the deploy-time values its config holds.
          triggers: pulumi.all([args.hashes[step.id], usedValues]).apply(([h, vals]) => [h, ...vals]),
          environment: Object.keys(environment).length > 0 ? environment : undefined,
          addPreviousOutputInEnv: false,
        },
        {
          ...parent,
          dependsOn: [
            configWrite,
            ...trees.values(),
            ...step.files.map(shipFile),
            ...step.dependsOn.map((d) => commands[d]),
          ],
          customTimeouts: step.timeouts,
        },
      );
      commands[step.id] = cmd;
      const output = IMAGE_OUTPUT[step.id];
      if (output) {
        const ref = cmd.stdout.apply((out) => requireImageResult(step.id, out));
        images[output] = ref;
        if (output === "tritonWithFtImage") deployValues.tritonWithFtImage = ref;
      }
    }
    this.commands = commands;
    if (!images.tritonWithFtImage || !images.serverImage)
      throw new Error("the build steps must include triton-with-ft and bake");
    this.tritonWithFtImage = images.tritonWithFtImage;
    this.serverImage = images.serverImage;

    if (args.stopBuilderWhenDone) {
      new aws.ec2transitgateway.InstanceState(
        `${name}-stopped`,
        { instanceId: args.instanceId, state: "stopped" },
        { ...parent, dependsOn: [commands.bake], replacementTrigger: allInputs },
      );
    }
    this.registerOutputs({ tritonWithFtImage: this.tritonWithFtImage, serverImage: this.serverImage });
  }
}
