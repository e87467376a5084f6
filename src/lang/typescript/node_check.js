// acp-patch's syntax check of JavaScript files, as `node --check` does it but for every file
// in one process (`node --experimental-vm-modules -e`): reads [{file, text, esm}] on stdin,
// compiles each text as a CommonJS script or an ES module without running it, and answers
// {version, results: [null | {line, message}]} on stdout.
"use strict";
const vm = require("vm");
const Module = require("module");
// vm does not say where an ES module's syntax error is: `node --check` on a copy does
function esmLine(text) {
  const fs = require("fs");
  const path = require("path");
  const dir = fs.mkdtempSync(path.join(require("os").tmpdir(), "acp-patch-node-check-"));
  const file = path.join(dir, "module.mjs");
  try {
    fs.writeFileSync(file, text);
    require("child_process").execFileSync(process.execPath, ["--check", file], { stdio: "pipe" });
    return 1;
  } catch (e) {
    const m = new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:(\\d+)`).exec(String(e.stderr || ""));
    return m ? Number(m[1]) : 1;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const results = JSON.parse(input).map((it) => {
    // a hashbang line is allowed only at the very start of a file
    const text = it.text.startsWith("#!") ? "//" + it.text.slice(2) : it.text;
    try {
      if (it.esm) new vm.SourceTextModule(text, { identifier: it.file });
      else new vm.Script(Module.wrap(text), { filename: it.file });
      return null;
    } catch (e) {
      const first = String(e.stack || "").split("\n")[0];
      const m = /:(\d+)$/.exec(first);
      return { line: m ? Number(m[1]) : it.esm ? esmLine(text) : 1, message: `${e.name}: ${e.message}` };
    }
  });
  process.stdout.write(JSON.stringify({ version: process.version, results }));
});
