/** Pulumi entry point: the runtime calls the exported function and exports what it returns. */
import { program } from "./program";

export = program;
