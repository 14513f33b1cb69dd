// Compiles Token.sol with solc from npm and writes token-artifact.json (the ABI, the creation
// bytecode for EVM "paris", which ganache 7 runs, the compiler version and the source's sha256). Not run by the tests: they load the
// committed artifact and check that its source digest is Token.sol's.
//   npm install --prefix /tmp/solc solc@0.8.37 && node test/support/contracts/compile.mjs /tmp/solc/node_modules/solc
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const solc = createRequire(import.meta.url)(process.argv[2] ?? "solc");
const source = readFileSync(join(here, "Token.sol"), "utf8");
const input = {
  language: "Solidity",
  sources: { "Token.sol": { content: source } },
  settings: { evmVersion: "paris", optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (out.errors ?? []).filter((e) => e.severity === "error");
if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
const c = out.contracts["Token.sol"].Token;
writeFileSync(
  join(here, "token-artifact.json"),
  JSON.stringify({ compiler: `solc ${solc.version()}`, sourceSha256: createHash("sha256").update(source).digest("hex"), abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` }, null, 1) + "\n",
);
console.log("wrote token-artifact.json with", solc.version());
