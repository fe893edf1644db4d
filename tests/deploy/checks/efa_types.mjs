// SPDX-License-Identifier: Apache-2.0
// EC2 instance types with EFA that the deployment names, and how many EFA interfaces each
// supports (EC2 User Guide, "Supported instance types" for EFA). The same table as the agent's
// lib/common/instance_types.cc; cppTableErrors() holds the two to each other.
//
// Shared by validate_manifests.mjs (node affinities of the device components) and
// validate_examples.mjs (an example's training pods must not compete with the agent for a
// node's only EFA).
import { readFileSync } from "node:fs";

export const EFA_DEVICES = new Map([
  ["p4d.24xlarge", 4], ["p4de.24xlarge", 4], ["p5.48xlarge", 32], ["p5e.48xlarge", 32],
  ["p5en.48xlarge", 16], ["p6-b200.48xlarge", 8], ["g6.12xlarge", 1], ["g6.48xlarge", 1],
  ["g6e.12xlarge", 1], ["g6e.24xlarge", 2], ["g6e.48xlarge", 4], ["trn1.32xlarge", 8],
  ["trn1n.32xlarge", 16],
  ["g5.8xlarge", 1], ["g5.12xlarge", 1], ["g5.16xlarge", 1], ["g5.24xlarge", 1],
  ["g5.48xlarge", 1], ["g6.8xlarge", 1], ["g6.16xlarge", 1], ["g6.24xlarge", 1],
  ["g6e.8xlarge", 1], ["g6e.16xlarge", 1], ["trn2.48xlarge", 16], ["trn2u.48xlarge", 16],
]);

// Types where the agent's own EFA would be the node's only one, which training pods need.
export const SINGLE_EFA_TYPES = new Set(
  [...EFA_DEVICES].filter(([, n]) => n === 1).map(([t]) => t));

// Lines naming a type whose count differs from the agent's table, or that one side lacks.
export function cppTableErrors(src) {
  const text = readFileSync(`${src}/lib/common/instance_types.cc`, "utf8");
  const cpp = new Map([...text.matchAll(/\{"([a-z0-9.-]+)",\s*(\d+)\}/g)].map((m) => [m[1], Number(m[2])]));
  const errs = [];
  for (const [t, n] of EFA_DEVICES) {
    if (cpp.get(t) !== n) errs.push(`${t}: ${n} EFAs here, ${cpp.get(t)} in lib/common/instance_types.cc`);
  }
  for (const t of cpp.keys()) if (!EFA_DEVICES.has(t)) errs.push(`${t}: in lib/common/instance_types.cc only`);
  return errs;
}
