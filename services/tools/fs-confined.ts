/**
 * The workspace-confined filesystem every tool gets instead of `node:fs`: the implementation is
 * shared/runtime/workspace-fs.ts (the browser actor confines its uploads and downloads with the
 * same code); this module keeps the tools actor's import path.
 */
export * from "../../shared/runtime/workspace-fs.js";
