// Validates an AsyncAPI document with the AsyncAPI initiative's own parser (schema and rules):
// node asyncapi.validate.mjs <url>. Prints every diagnostic; exits 1 on any error or warning.
import { Parser } from '@asyncapi/parser';

const SEVERITY = ['error', 'warning', 'info', 'hint'];
const response = await fetch(process.argv[2]);
if (!response.ok) {
  console.log(`GET ${process.argv[2]}: ${response.status}`);
  process.exit(1);
}
const { document, diagnostics } = await new Parser().parse(await response.text());
for (const d of diagnostics) {
  console.log(`${SEVERITY[d.severity]} ${d.code} at ${JSON.stringify(d.path)}: ${d.message}`);
}
const failed = !document || diagnostics.some((d) => d.severity <= 1);
console.log(failed ? 'asyncapi: invalid' : `asyncapi: valid ${document.version()}`);
process.exit(failed ? 1 : 0);
