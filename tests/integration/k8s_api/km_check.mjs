// km_check.mjs - checks resource.k8s.io/v1 objects against the validators
// the npm package kubernetes-models generates from the upstream OpenAPI
// (types, required fields, enums as upstream publishes them), not only
// against gpuslice's own schema. Run by km_check.sh.
//   node km_check.mjs FILE   (a JSON array of objects)
// Exit 0 when all are valid; 1 with one line per problem.
import { readFileSync } from "node:fs";
import * as v1 from "kubernetes-models/resource.k8s.io/v1";

const objs = JSON.parse(readFileSync(process.argv[2], "utf8"));
let bad = 0;
for (const o of objs) {
	const Cls = v1[o.kind];
	const name = `${o.kind} ${(o.metadata || {}).name}`;
	if (!Cls) {
		console.log(`${name}: no such kind in resource.k8s.io/v1`);
		bad++;
		continue;
	}
	try {
		new Cls(o).validate();
	} catch (e) {
		console.log(`${name}: ${String(e.message).slice(0, 400)}`);
		bad++;
	}
}
process.exit(bad ? 1 : 0);
