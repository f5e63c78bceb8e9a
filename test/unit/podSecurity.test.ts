import { describe, expect, it } from "vitest";
import {
  containerSecurityContext,
  podSecurityContext,
  supportContainerSecurityContext,
} from "../../infra/render/podSecurity";

describe("pod security helpers", () => {
  it("give Triton's containers and the ones beside it the same restricted profile, defaults filled in", () => {
    const pod = podSecurityContext(1000);
    // privileged defaults to false, and a container inherits the pod's seccomp profile.
    const effective = (c: ReturnType<typeof containerSecurityContext>) => ({
      privileged: false,
      seccompProfile: pod.seccompProfile,
      ...c,
    });
    expect(effective(supportContainerSecurityContext())).toEqual(effective(containerSecurityContext()));
  });

  it("set fsGroup only when asked, to the pod's own group", () => {
    expect(podSecurityContext(1000)).not.toHaveProperty("fsGroup");
    expect(podSecurityContext(1000, { fsGroup: true }).fsGroup).toBe(1000);
  });
});
