#!/usr/bin/env node
import { processIo } from './cli/io.js';
import { runCommandLine } from './cli/run.js';

runCommandLine(process.argv.slice(2), processIo()).then((code) => process.exit(code));
