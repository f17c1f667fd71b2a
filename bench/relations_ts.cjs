// TypeScript's side of bench/relations.py (bench only). Usage:
//   node relations_ts.cjs TYPESCRIPT_DIR ROOT defs            -> [{path, qualname, pos, overload}]
//   node relations_ts.cjs TYPESCRIPT_DIR ROOT query JSON      -> {callers: [[[path, qualname]]], callees: [...]}
// JSON is [[path, pos], ...] (pos: the definition name's offset). A caller is the innermost definition around a
// reference (function, class, method, accessor, interface, type, enum, module-level variable or a variable
// holding a function), "<module>" outside any; callees are where the calls of a body's own code go.
"use strict";
const fs = require("fs");
const path = require("path");
const [, , tsDir, root, command, payload] = process.argv;
const ts = require(tsDir);

function listFiles(dir, out) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) listFiles(full, out);
    else if (/\.(ts|tsx|js|jsx|mjs|cjs|mts|cts)$/.test(entry.name)) out.push(full);
  }
  return out;
}

const files = listFiles(root, []);
const options = { allowJs: true, checkJs: false, target: ts.ScriptTarget.ESNext, module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler, jsx: ts.JsxEmit.Preserve, noEmit: true, skipLibCheck: true };
const host = {
  getScriptFileNames: () => files,
  getScriptVersion: () => "1",
  getScriptSnapshot: (f) => (fs.existsSync(f) ? ts.ScriptSnapshot.fromString(fs.readFileSync(f, "utf8")) : undefined),
  getCurrentDirectory: () => root,
  getCompilationSettings: () => options,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: ts.sys.fileExists, readFile: ts.sys.readFile, readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists, getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());
const program = service.getProgram();
const rel = (f) => path.relative(root, f).split(path.sep).join("/");

function isFunctionLike(node) {
  return node && (ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isClassExpression(node));
}

// Definitions of one file: {qualname, start, end, pos, overload, node}
const defsByFile = new Map();
function defsOf(file) {
  if (defsByFile.has(file)) return defsByFile.get(file);
  const source = program.getSourceFile(file);
  const found = [];
  function visit(node, scope, topLevel) {
    let name = null;
    let span = node;
    let overload = false;
    if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) {
      name = node.name.getText(source);
      overload = !node.body;
    } else if ((ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)
        || ts.isEnumDeclaration(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node)
        || ts.isPropertyDeclaration(node) || ts.isMethodSignature(node)) && node.name) {
      name = node.name.getText(source);
    } else if (ts.isConstructorDeclaration(node)) {
      name = "constructor";
      overload = !node.body;
    } else if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name)
        && (topLevel || isFunctionLike(node.initializer))) {
      name = node.name.getText(source);
      const statement = node.parent && node.parent.parent;
      if (statement && ts.isVariableStatement(statement) && node.parent.declarations.length === 1) span = statement;
    }
    if (name !== null) {
      const nameNode = node.name || node.getChildren(source).find((c) => c.kind === ts.SyntaxKind.ConstructorKeyword);
      const def = { qualname: [...scope, name].join("."), start: span.getStart(source), end: span.getEnd(),
        pos: nameNode ? nameNode.getStart(source) : node.getStart(source), overload, node };
      found.push(def);
      ts.forEachChild(node, (child) => visit(child, [...scope, name], false));
      return;
    }
    const stillTop = topLevel && (ts.isSourceFile(node) || ts.isVariableStatement(node)
      || ts.isVariableDeclarationList(node) || ts.isModuleBlock(node) || ts.isModuleDeclaration(node));
    ts.forEachChild(node, (child) => visit(child, scope, stillTop));
  }
  visit(source, [], true);
  defsByFile.set(file, found);
  return found;
}

function enclosing(file, offset) {
  let best = null;
  for (const d of defsOf(file)) {
    if (d.start <= offset && offset < d.end && (best === null || d.start >= best.start && d.end <= best.end)) best = d;
  }
  return best ? best.qualname : "<module>";
}

function defAt(file, offset) {
  if (!files.includes(file)) return null;
  const hit = defsOf(file).find((d) => d.pos === offset);
  return hit ? hit.qualname : null;
}

function callees(file, def) {
  const source = program.getSourceFile(file);
  const nested = new Set(defsOf(file).filter((d) => d !== def).map((d) => d.node));
  const out = new Map();
  function visit(node) {
    if (nested.has(node) || ts.isDecorator(node)) return;
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      let callee = node.expression;
      if (ts.isPropertyAccessExpression(callee)) callee = callee.name;
      if (ts.isIdentifier(callee) || ts.isPrivateIdentifier(callee)) {
        for (const target of service.getDefinitionAtPosition(file, callee.getStart(source)) || []) {
          const qualname = defAt(target.fileName, target.textSpan.start);
          if (qualname) out.set(`${rel(target.fileName)}\0${qualname}`, [rel(target.fileName), qualname]);
        }
      }
    }
    ts.forEachChild(node, visit);
  }
  ts.forEachChild(def.node, visit);
  return [...out.values()];
}

if (command === "defs") {
  const out = [];
  for (const file of files) {
    for (const d of defsOf(file)) out.push({ path: rel(file), qualname: d.qualname, pos: d.pos, overload: d.overload });
  }
  process.stdout.write(JSON.stringify(out));
} else if (command === "query") {
  const callers = [];
  const calls = [];
  for (const [relPath, pos] of JSON.parse(payload)) {
    const file = path.join(root, relPath);
    const def = defsOf(file).find((d) => d.pos === pos);
    const own = new Set(defsOf(file).filter((d) => d.qualname === def.qualname).map((d) => `${file}\0${d.pos}`));
    const found = new Map();
    for (const symbol of service.findReferences(file, pos) || []) {
      for (const ref of symbol.references) {
        if (own.has(`${ref.fileName}\0${ref.textSpan.start}`) || !files.includes(ref.fileName)) continue;
        const key = [rel(ref.fileName), enclosing(ref.fileName, ref.textSpan.start)];
        found.set(key.join("\0"), key);
      }
    }
    callers.push([...found.values()]);
    calls.push(callees(file, def));
  }
  process.stdout.write(JSON.stringify({ callers, callees: calls }));
}
