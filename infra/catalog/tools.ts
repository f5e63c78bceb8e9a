/**
 * Pinned tools the build steps install on the builder host. The remote scripts stay the only thing
 * the host runs, so each pin is written out in its script as well; test/unit/supportCatalog.test.ts
 * fails while the script and this file disagree.
 */

/** A Python package a remote step installs with pip, with where and when the version was checked. */
export interface PipToolPin {
  /** The requirement's name, extras included, as pip reads it. */
  requirement: string;
  version: string;
  /** The script that installs it (repository path). */
  installedBy: string;
  source: string;
  /** When it was last checked (ISO date). */
  checked: string;
}

/**
 * `huggingface-cli`, installed by the fetch step only when the host lacks it (the DLAMI does not
 * ship it). The first pin (2026-11-22) was checked against PyPI again on 2026-11-27.
 */
export const HUGGINGFACE_CLI: PipToolPin = {
  requirement: "huggingface_hub[cli]",
  version: "0.26.5",
  installedBy: "scripts/remote/fetch.sh",
  source: "https://pypi.org/project/huggingface-hub/0.26.5/",
  checked: "2026-11-27",
};

/** `<requirement>==<version>`, the argument the script passes to pip. */
export function pipRequirement(t: PipToolPin): string {
  return `${t.requirement}==${t.version}`;
}
