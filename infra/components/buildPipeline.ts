/**
 * The remote build steps as resources: the scripts, images and rendered files
 * shipped with `remote.CopyToRemote` (each source tree as a staged copy of its
 * git-tracked files, the same files its hash covers), and one `remote.Command` per step whose
 * triggers are exactly that step's inputs (its input hash plus the deploy-time
 * values its config uses). The steps and their hashes are the plan's
 * `buildSteps` (infra/plan/steps.ts); this component only wires them.
 */
import * as aws from "@pulumi/aws";
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import type { BuildStep } from "../plan";
import { measuredSteps, type MeasuredStep } from "../plan/measurements";
import { builderRestartTrigger } from "../plan/restart";
import { REMOTE } from "../plan/paths";
import {
  SHIPPED_TREES,
  deployValuesOf,
  renderStepConfig,
  requireImageResult,
  runOrder,
  stepCommand,
  stepConfigPath,
  type DeployValue,
  type GeneratedFile,
  type SecretEnv,
  type StepId,
} from "../plan/stepGraph";

export interface BuildPipelineArgs {
  /** The plan's build steps, in graph order, each with its input hash. */
  readonly steps: BuildStep[];
  /** SSH connection to the builder host (user, address, private key) the copies and steps run over. */
  readonly connection: command.types.input.remote.ConnectionArgs;
  /** The builder instance: its id re-ships everything onto a replaced host. */
  readonly instanceId: pulumi.Input<string>;
  /** AWS region of the registry: the steps' `{ deploy: "awsRegion" }` value. */
  readonly region: pulumi.Input<string>;
  /** The account's ECR registry host the steps log in to (`{ deploy: "ecrRegistry" }`). */
  readonly ecrRegistry: pulumi.Input<string>;
  /** Repository the triton_with_ft base image is pushed to (`{ deploy: "tritonWithFtRepositoryUrl" }`). */
  readonly tritonWithFtRepositoryUrl: pulumi.Input<string>;
  /** Repository the baked server image is pushed to (`{ deploy: "serverRepositoryUrl" }`). */
  readonly serverRepositoryUrl: pulumi.Input<string>;
  /** Repository the gateway image is pushed to (`{ deploy: "gatewayRepositoryUrl" }`). */
  readonly gatewayRepositoryUrl: pulumi.Input<string>;
  /** Secret environment of the steps that declare it (HF_TOKEN for fetch). */
  readonly secretEnv: Partial<Record<SecretEnv, pulumi.Output<string>>>;
  /** Start the builder before the steps and stop it after the bake. */
  readonly stopBuilderWhenDone: boolean;
  /**
   * What the hosts' preparation waits for besides their start: the registry's
   * blob-mounting setting (components/registry.ts), so the first bake already
   * mounts the base's layers. An ordering only: no step's trigger reads it.
   * @default none
   */
  readonly registryReady?: pulumi.Resource[];
  /**
   * The local folder holding exactly the tracked files of a repo-relative
   * tree, named like it (infra/repoFiles.ts stageTree): what is shipped is
   * what the step hashes cover, never an untracked file or a node_modules.
   */
  readonly stageTree: (tree: string) => string;
  /**
   * A further model's pipeline (the stack serves several). `stack`: the
   * stack's first pipeline, which builds the gateway image. `host`: on a
   * builder another model's pipeline owns, that pipeline, which supplies the
   * host it prepared (start, /opt, shipped trees: nothing is shipped twice to
   * one builder) and the builder's triton_with_ft. Without `host` the pipeline
   * owns its builder: host-ready and triton_with_ft (for its GPU family) are
   * its own steps beside the model's fetch, convert, gemm and bake.
   * @default none: the stack's first pipeline, which runs every step
   */
  readonly shared?: {
    readonly stack: BuildPipeline;
    /**
     * The pipeline that owns the builder this one runs on.
     * @default none: this pipeline owns its builder
     */
    readonly host?: BuildPipeline;
    /**
     * A canary's pipeline (plan/canary.ts): its stable model's pipeline, which
     * runs the model steps the canary shares (their hashes are equal); the
     * canary's own steps wait for them there.
     * @default none: every model step this pipeline waits for is its own
     */
    readonly steps?: BuildPipeline;
  };
  /**
   * The CPU host that compiles triton_with_ft (catalog/compileHosts.ts): the
   * steps the plan puts on it (`host: "compiler"`) run over its connection,
   * after its own preparation and readiness check, and with
   * stopBuilderWhenDone it is started before them and stopped right after.
   * @default none: a step the plan puts on it is then refused
   */
  readonly compileHost?: {
    /** SSH connection to the compile host. */
    readonly connection: command.types.input.remote.ConnectionArgs;
    /** Its instance: a replaced host re-runs its steps (the image is then found in ECR by its tag). */
    readonly instanceId: pulumi.Input<string>;
    /**
     * Its instance type. A new one is applied in place by a stop, the change
     * and a start, whatever state the host was in (the AWS provider:
     * hashicorp/terraform-provider-aws#1998), so with stopBuilderWhenDone a
     * further InstanceState, replaced with the type, stops it again after.
     */
    readonly instanceType: string;
    /** Free disk its readiness check requires (model/sizing.ts compileHostDiskGiB less the OS). */
    readonly requiredFreeGiB: number;
  };
  /**
   * triton_with_ft taken from another stack (build.tritonWithFtFrom), checked
   * (infra/promotion/tritonWithFt.ts): the plan then has no triton-with-ft
   * step, and the steps that wait for it use this image.
   * @default none: this stack compiles its own
   */
  readonly takenTritonWithFtImage?: pulumi.Input<string>;
  /**
   * Input hashes of the further models' steps that run on this pipeline's
   * builder (keyed `<model>/<step>`): a change to any of them must start a
   * stopped builder too.
   * @default none: no further model's step runs on this builder
   */
  readonly hostedStepHashes?: Readonly<Record<string, string>>;
}

/** Where a host's commands go, and the name prefix of the resources made on it ("" on the builder). */
interface HostAddress {
  connection: command.types.input.remote.ConnectionArgs;
  instanceId: pulumi.Input<string>;
  namePrefix: string;
}

/** A prepared host: its address, start trigger, /opt, shipped trees and what a step there waits for besides them. */
interface HostSetup extends HostAddress {
  restart: pulumi.Output<string>;
  prepare: command.remote.Command;
  trees: command.remote.CopyToRemote[];
  ready: pulumi.Resource[];
}

/** The image each image-producing step pushes, as an output. */
const IMAGE_OUTPUT: Partial<Record<StepId, "tritonWithFtImage" | "serverImage" | "gatewayImage">> = {
  "triton-with-ft": "tritonWithFtImage",
  bake: "serverImage",
  "gateway-image": "gatewayImage",
};

export class BuildPipeline extends pulumi.ComponentResource {
  /** The steps this pipeline runs (a further model's pipeline runs only that model's). */
  readonly commands: Partial<Record<StepId, command.remote.Command>>;
  /** Digest-pinned triton_with_ft reference printed by its step; "" on a builder of vLLM models only (it builds none). */
  readonly tritonWithFtImage: pulumi.Output<string>;
  /** Digest-pinned server image reference printed by the bake step. */
  readonly serverImage: pulumi.Output<string>;
  /** Digest-pinned gateway image reference printed by the gateway-image step. */
  readonly gatewayImage: pulumi.Output<string>;
  /** What each of this pipeline's steps took in its last real run, where its host recorded it (plan/measurements.ts). */
  readonly stepTimes: pulumi.Output<MeasuredStep[]>;

  private readonly name: string;
  private readonly args: BuildPipelineArgs;
  private readonly restart: pulumi.Output<string>;
  private readonly trees: command.remote.CopyToRemote[];
  private readonly prepare: command.remote.Command;
  private marked = false;
  private readonly fileCopies = new Map<string, command.remote.CopyToRemote>();
  private readonly deployValues: Partial<Record<DeployValue, pulumi.Output<string>>>;
  private compiler?: HostSetup;

  constructor(name: string, args: BuildPipelineArgs, opts?: pulumi.ComponentResourceOptions) {
    super("triton-ft:buildPipeline:BuildPipeline", name, {}, opts);
    this.name = name;
    this.args = args;
    this.deployValues = {
      awsRegion: pulumi.output(args.region),
      ecrRegistry: pulumi.output(args.ecrRegistry),
      tritonWithFtRepositoryUrl: pulumi.output(args.tritonWithFtRepositoryUrl),
      serverRepositoryUrl: pulumi.output(args.serverRepositoryUrl),
      gatewayRepositoryUrl: pulumi.output(args.gatewayRepositoryUrl),
      // tritonWithFtImage joins once its step exists; graph order puts it before its consumers.
    };

    const shared = args.shared;
    const taken = args.takenTritonWithFtImage ? pulumi.output(args.takenTritonWithFtImage) : undefined;
    if (taken) this.deployValues.tritonWithFtImage = taken;
    if (shared?.host) this.deployValues.tritonWithFtImage = shared.host.tritonWithFtImage;
    const host = shared?.host ? shared.host.hostSetup() : this.ownHost();

    const builderHost: HostSetup = {
      ...host,
      connection: args.connection,
      instanceId: args.instanceId,
      namePrefix: "",
      ready: [],
    };
    const commands: Partial<Record<StepId, command.remote.Command>> = {};
    const images: Partial<Record<"tritonWithFtImage" | "serverImage" | "gatewayImage", pulumi.Output<string>>> = {};
    for (const step of args.steps) {
      const on = step.host === "compiler" ? this.compilerHost(step) : builderHost;
      const deps = [
        ...on.trees,
        ...on.ready,
        ...step.files.map((f) => this.shipFile(f, on)),
        // A taken triton_with_ft is no step here: it exists before this pipeline starts.
        ...runOrder(step)
          .filter((d) => !(taken && d === "triton-with-ft"))
          .map((d) => this.upstream(d, commands)),
      ];
      const cmd = this.stepCommand(step, on, deps);
      commands[step.id] = cmd;
      const output = IMAGE_OUTPUT[step.id];
      if (output) {
        const ref = cmd.stdout.apply((out) => requireImageResult(step.id, out));
        images[output] = ref;
        if (output === "tritonWithFtImage") this.deployValues.tritonWithFtImage = ref;
      }
    }
    this.commands = commands;
    const ran = args.steps.flatMap((s) => {
      const cmd = commands[s.id];
      return cmd ? [{ step: s, stdout: cmd.stdout }] : [];
    });
    this.stepTimes = pulumi
      .all(ran.map((r) => r.stdout))
      .apply((outs) =>
        measuredSteps(ran.map((r, i) => ({ id: r.step.id, inputHash: r.step.inputHash, stdout: outs[i] }))),
      );
    // A builder whose models are all vLLM models (issue 37) builds no triton_with_ft: nothing here consumes one.
    const consumesTritonWithFt = args.steps.some((st) =>
      st.config.some(
        ([, v]) => typeof v === "object" && !Array.isArray(v) && "deploy" in v && v.deploy === "tritonWithFtImage",
      ),
    );
    const tritonWithFtImage =
      images.tritonWithFtImage ??
      shared?.host?.tritonWithFtImage ??
      taken ??
      (consumesTritonWithFt ? undefined : pulumi.output(""));
    const gatewayImage = images.gatewayImage ?? shared?.stack.gatewayImage;
    if (!tritonWithFtImage || !images.serverImage || !gatewayImage)
      throw new pulumi.ResourceError(
        "the build steps must include bake, triton-with-ft when a step consumes it (unless the builder's owning pipeline runs it or it is taken from another stack), and gateway-image unless the stack's first pipeline runs it",
        this,
      );
    this.tritonWithFtImage = tritonWithFtImage;
    this.serverImage = images.serverImage;
    this.gatewayImage = gatewayImage;

    this.restart = host.restart;
    this.trees = host.trees;
    this.prepare = host.prepare;
    this.stopCompilerWhenDone(commands);
    this.registerOutputs({
      tritonWithFtImage: this.tritonWithFtImage,
      serverImage: this.serverImage,
      gatewayImage: this.gatewayImage,
    });
  }

  /** What this pipeline prepared on its host, for a further model's pipeline on the same builder. */
  hostSetup(): {
    restart: pulumi.Output<string>;
    prepare: command.remote.Command;
    trees: command.remote.CopyToRemote[];
  } {
    return { restart: this.restart, prepare: this.prepare, trees: this.trees };
  }

  /** Start (when stopped), /opt, the shipped trees: this pipeline's own builder. */
  private ownHost(): {
    restart: pulumi.Output<string>;
    prepare: command.remote.Command;
    trees: command.remote.CopyToRemote[];
  } {
    const restart = this.restartTrigger();
    const running = this.startBuilder(restart);
    const here = { connection: this.args.connection, instanceId: this.args.instanceId, namePrefix: "" };
    const prepare = this.prepareHost(here, running);
    return { restart, prepare, trees: this.shipTrees(here, prepare) };
  }

  /**
   * The compile host, set up once for the steps the plan puts on it: started
   * (when stopped) exactly when one of them will run, /opt, the shipped trees,
   * then its readiness check (scripts/remote/compile-host-ready.sh).
   */
  private compilerHost(step: BuildStep): HostSetup {
    if (this.compiler) return this.compiler;
    const c = this.args.compileHost;
    if (!c)
      throw new pulumi.ResourceError(
        `build step ${step.id} runs on the compile host, but the pipeline was given none (BuildPipelineArgs.compileHost)`,
        this,
      );
    const here = { connection: c.connection, instanceId: c.instanceId, namePrefix: "compiler-" };
    const onIt = this.args.steps.filter((s) => s.host === "compiler");
    const restart = pulumi
      .all([
        c.instanceId,
        pulumi.all([this.args.region, this.args.ecrRegistry, this.args.tritonWithFtRepositoryUrl]),
        pulumi.output(c.connection),
      ])
      .apply(([instanceId, deployValues, conn]) =>
        builderRestartTrigger({
          stepHashes: Object.fromEntries(onIt.map((s) => [s.id, s.inputHash])),
          commands: Object.fromEntries(onIt.map((s) => [s.id, stepCommand(s)])),
          instanceId,
          deployValues,
          connection: {
            host: conn.host,
            user: conn.user,
            port: conn.port,
            hostKey: conn.hostKey,
            privateKey: conn.privateKey,
          },
          secretEnv: [],
        }),
      );
    const running = this.args.stopBuilderWhenDone
      ? new aws.ec2transitgateway.InstanceState(
          `${this.name}-compiler-running`,
          { instanceId: c.instanceId, state: "running" },
          { parent: this, replacementTrigger: restart, ignoreChanges: ["state"] },
        )
      : undefined;
    const prepare = this.prepareHost(here, running);
    const trees = this.shipTrees(here, prepare);
    const ready = new command.remote.Command(
      `${this.name}-compiler-ready`,
      {
        connection: c.connection,
        create: `bash ${REMOTE.scripts}/remote/compile-host-ready.sh ${REMOTE.root} ${c.requiredFreeGiB}`,
        triggers: [c.instanceId],
        addPreviousOutputInEnv: false,
      },
      { parent: this, dependsOn: trees, customTimeouts: { create: "40m", update: "40m" } },
    );
    this.compiler = { ...here, restart, prepare, trees, ready: [ready] };
    return this.compiler;
  }

  /** With stopBuilderWhenDone the compile host stops once its steps are done, re-created when they run again. */
  private stopCompilerWhenDone(commands: Partial<Record<StepId, command.remote.Command>>): void {
    const compiler = this.compiler;
    if (!compiler || !this.args.stopBuilderWhenDone || !this.args.compileHost) return;
    const done = this.args.steps.flatMap((s) => {
      const cmd = s.host === "compiler" ? commands[s.id] : undefined;
      return cmd ? [cmd] : [];
    });
    const stopped = new aws.ec2transitgateway.InstanceState(
      `${this.name}-compiler-stopped`,
      { instanceId: this.args.compileHost.instanceId, state: "stopped" },
      { parent: this, dependsOn: done, replacementTrigger: compiler.restart },
    );
    // A new instance type (the plan's pick) starts the host with no step to
    // stop it. The type is kept out of the restart trigger above, which would
    // replace both InstanceStates of every live compile host; this one is
    // created on a live stack's next up (after the type change, since its
    // instanceId waits for the instance) and replaced only when the type moves.
    new aws.ec2transitgateway.InstanceState(
      `${this.name}-compiler-stopped-at-type`,
      { instanceId: this.args.compileHost.instanceId, state: "stopped" },
      { parent: this, dependsOn: [...done, stopped], replacementTrigger: this.args.compileHost.instanceType },
    );
  }

  /** A step this one waits for: in this pipeline, its stable model's (a canary's), or the builder owner's. */
  private upstream(id: StepId, own: Partial<Record<StepId, command.remote.Command>>): command.remote.Command {
    const found = own[id] ?? this.args.shared?.steps?.commands[id] ?? this.args.shared?.host?.commands[id];
    if (!found) throw new pulumi.ResourceError(`build step ${id} is waited for but no pipeline runs it`, this);
    return found;
  }

  /**
   * Tags what is deployed when it is deployed: once a rollout of an image has
   * succeeded, its repository's `deployed` tag moves to the image's digest and
   * the digest it held to `deployed-previous` (scripts/remote/tag-deployed.sh;
   * the lifecycle policy never expires either, infra/cloud/ecr.ts). The
   * builder runs it (it has the AWS CLI and the ECR role); with
   * stopBuilderWhenDone it stops only after these, and the program must call
   * this once, after the workloads.
   */
  markDeployed(
    rollouts: ReadonlyArray<{ id: string; image: pulumi.Input<string>; rollout: pulumi.Resource }>,
    /** Further models' bakes on this builder: it stops only after them too. */
    alsoBuilt: pulumi.Resource[] = [],
  ): void {
    if (this.marked) throw new pulumi.ResourceError("markDeployed is called once", this);
    this.marked = true;
    const tags = rollouts.map(
      (r) =>
        new command.remote.Command(
          `${this.name}-deployed-${r.id}`,
          {
            connection: this.args.connection,
            create: pulumi.interpolate`bash ${REMOTE.scripts}/remote/tag-deployed.sh ${this.args.region} ${r.image}`,
            // Only a new image is tagged again; a rollout of the same image changes nothing in ECR.
            triggers: [r.image],
            addPreviousOutputInEnv: false,
          },
          { parent: this, dependsOn: [r.rollout, ...this.trees] },
        ),
    );
    // A further model on a shared builder leaves starting and stopping to the pipeline that owns the host.
    if (this.args.stopBuilderWhenDone && !this.args.shared?.host) {
      new aws.ec2transitgateway.InstanceState(
        `${this.name}-stopped`,
        { instanceId: this.args.instanceId, state: "stopped" },
        {
          parent: this,
          dependsOn: [...(this.commands.bake ? [this.commands.bake] : []), ...alsoBuilt, ...tags],
          replacementTrigger: this.restart,
        },
      );
    }
  }

  /** Starts a stopped builder exactly when some step will run (infra/plan/restart.ts). */
  private restartTrigger(): pulumi.Output<string> {
    const a = this.args;
    return pulumi
      .all([
        a.instanceId,
        pulumi.all([a.region, a.ecrRegistry, a.tritonWithFtRepositoryUrl, a.serverRepositoryUrl]),
        pulumi.output(a.connection),
        pulumi.all(Object.values(a.secretEnv)),
      ])
      .apply(([instanceId, deployValues, c, secretEnv]) =>
        builderRestartTrigger({
          stepHashes: { ...Object.fromEntries(a.steps.map((s) => [s.id, s.inputHash])), ...a.hostedStepHashes },
          // A further model's commands change only with these (one stepCommand makes them all).
          commands: Object.fromEntries(a.steps.map((s) => [s.id, stepCommand(s)])),
          instanceId,
          deployValues,
          connection: { host: c.host, user: c.user, port: c.port, hostKey: c.hostKey, privateKey: c.privateKey },
          secretEnv,
        }),
      );
  }

  /**
   * Stopped by a previous run: start it before anything needs SSH. The trigger
   * replaces (re-creates) this resource exactly when some step will run again,
   * so an unchanged stack leaves a stopped builder stopped.
   */
  private startBuilder(restart: pulumi.Output<string>): pulumi.Resource | undefined {
    if (!this.args.stopBuilderWhenDone) return undefined;
    return new aws.ec2transitgateway.InstanceState(
      `${this.name}-running`,
      { instanceId: this.args.instanceId, state: "running" },
      { parent: this, replacementTrigger: restart, ignoreChanges: ["state"] },
    );
  }

  /** /opt is root's; the copies below run as the SSH user. */
  private prepareHost(on: HostAddress, running: pulumi.Resource | undefined): command.remote.Command {
    return new command.remote.Command(
      `${this.name}-${on.namePrefix}prepare`,
      {
        connection: on.connection,
        create: `sudo install -d -o "$(id -un)" -g "$(id -gn)" -m 0755 ${REMOTE.root} ${REMOTE.scripts} ${REMOTE.steps} ${REMOTE.plan}`,
        triggers: [on.instanceId],
        addPreviousOutputInEnv: false,
      },
      {
        parent: this,
        dependsOn: [...(running ? [running] : []), ...(this.args.registryReady ?? [])],
        customTimeouts: { create: "30m", update: "30m" },
      },
    );
  }

  /** Source trees (scripts, images), each as its staged copy of tracked files. */
  private shipTrees(on: HostAddress, prepare: command.remote.Command): command.remote.CopyToRemote[] {
    return SHIPPED_TREES.map(
      (t) =>
        new command.remote.CopyToRemote(
          `${this.name}-${on.namePrefix}ship-${t.local.replace(/\//g, "-")}`,
          {
            connection: on.connection,
            source: new pulumi.asset.FileArchive(this.args.stageTree(t.local)),
            remotePath: t.remoteParent,
            triggers: [on.instanceId],
          },
          { parent: this, dependsOn: [prepare] },
        ),
    );
  }

  /** A rendered file, shipped once per host even when several steps read it. */
  private shipFile(f: GeneratedFile, on: HostSetup): command.remote.CopyToRemote {
    const key = `${on.namePrefix}${f.remotePath}`;
    const existing = this.fileCopies.get(key);
    if (existing) return existing;
    const copy = new command.remote.CopyToRemote(
      `${this.name}-${on.namePrefix}file-${f.remotePath.slice(REMOTE.root.length + 1).replace(/[^A-Za-z0-9]+/g, "-")}`,
      {
        connection: on.connection,
        source: new pulumi.asset.StringAsset(f.content),
        remotePath: f.remotePath,
        triggers: [on.instanceId],
      },
      { parent: this, dependsOn: [on.prepare] },
    );
    this.fileCopies.set(key, copy);
    return copy;
  }

  private deployValue(step: StepId, v: DeployValue): pulumi.Output<string> {
    const value = this.deployValues[v];
    if (!value) throw new pulumi.ResourceError(`build step ${step} uses ${v} before the step that produces it`, this);
    return value;
  }

  /** The step's config write and its command, triggered by exactly its inputs. */
  private stepCommand(step: BuildStep, on: HostSetup, dependsOn: pulumi.Resource[]): command.remote.Command {
    const conn = on.connection;
    const used = deployValuesOf(step);
    const usedValues = pulumi.all(used.map((v) => this.deployValue(step.id, v)));
    const configText = usedValues.apply((vals) => {
      const byName = Object.fromEntries(used.map((v, i) => [v, vals[i] ?? ""])) as Record<DeployValue, string>;
      return renderStepConfig(step, (v) => byName[v]);
    });
    // Written through stdin rather than CopyToRemote: the content holds values
    // (repository URLs, the triton_with_ft digest) that are unknown during a
    // first preview, and CopyToRemote refuses an unknown source there.
    const path = stepConfigPath(step.id, step.scope);
    // A further model's configs sit in a folder of their own (prepare made only the shared one).
    const mkdir = step.scope ? `mkdir -p ${REMOTE.steps}/${step.scope}; ` : "";
    const configWrite = new command.remote.Command(
      `${this.name}-config-${step.id}`,
      {
        connection: conn,
        create: `set -eu; umask 022; ${mkdir}tmp=$(mktemp ${path}.XXXXXX); cat > "$tmp"; mv -f "$tmp" ${path}`,
        stdin: configText,
        triggers: [on.instanceId],
        addPreviousOutputInEnv: false,
      },
      { parent: this, dependsOn: [on.prepare] },
    );
    const environment: Record<string, pulumi.Output<string>> = {};
    for (const key of step.secretEnv) {
      const value = this.args.secretEnv[key];
      if (value) environment[key] = pulumi.secret(value);
    }
    return new command.remote.Command(
      `${this.name}-${step.id}`,
      {
        connection: conn,
        create: stepCommand(step),
        // Exactly the step's inputs: the builder's identity (a replaced instance is an
        // empty host), its hash, then the deploy-time values its config holds.
        triggers: pulumi
          .all([on.instanceId, usedValues])
          .apply(([instanceId, vals]) => [instanceId, step.inputHash, ...vals]),
        environment: Object.keys(environment).length > 0 ? environment : undefined,
        addPreviousOutputInEnv: false,
      },
      { parent: this, dependsOn: [configWrite, ...dependsOn], customTimeouts: step.timeouts },
    );
  }
}
