import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { buildConfig, type Config, ConfigError, envName, OPTIONS } from './options.js';

/** What the command line said: the subcommand and the configuration keys it set. */
export interface CommandLine {
  command: string;
  configFile: string | undefined;
  flags: Map<string, string>;
}

const COMMANDS = ['serve', 'migrate', 'version', 'help'];

/** Parses argv (without node and script). Throws ConfigError for an unknown flag or command. */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  const options: Record<string, { type: 'string' | 'boolean' }> = { config: { type: 'string' } };
  for (const o of OPTIONS) options[o.flag] = { type: 'string' };
  options.help = { type: 'boolean' };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ConfigError('command line', (error as Error).message.split('\n')[0] as string);
  }
  const [command = 'serve', ...extra] = parsed.positionals;
  if (parsed.values.help) return { command: 'help', configFile: undefined, flags: new Map() };
  if (!COMMANDS.includes(command)) {
    throw new ConfigError('command line', `unknown command "${command}" (expected ${COMMANDS.join(', ')})`);
  }
  if (extra.length > 0) throw new ConfigError('command line', `unexpected argument "${extra[0]}"`);
  const flags = new Map<string, string>();
  for (const o of OPTIONS) {
    const v = parsed.values[o.flag];
    if (typeof v === 'string') flags.set(o.key, v);
  }
  const configFile = parsed.values.config;
  return { command, configFile: typeof configFile === 'string' ? configFile : undefined, flags };
}

function flattenYaml(value: unknown, prefix: string, out: Map<string, string>): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      flattenYaml(v, prefix ? `${prefix}.${k}` : k, out);
    }
    return;
  }
  if (!OPTIONS.some((o) => o.key === prefix)) throw new ConfigError(prefix, 'unknown key in the config file');
  if (typeof value === 'object') throw new ConfigError(prefix, 'must be a single value, not a list');
  out.set(prefix, String(value));
}

function readConfigFile(path: string): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(
      'config',
      `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new ConfigError('config', `${path} is not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  const out = new Map<string, string>();
  if (doc !== null && doc !== undefined && (typeof doc !== 'object' || Array.isArray(doc))) {
    throw new ConfigError('config', `${path} must hold a mapping of keys`);
  }
  flattenYaml(doc, '', out);
  return out;
}

/** Resolves every key with the precedence flags > environment > config file > defaults. */
export function loadConfig(cli: CommandLine, env: NodeJS.ProcessEnv = process.env): Config {
  const configFile = cli.configFile ?? env.REPLICATOR_CONFIG;
  const merged = configFile ? readConfigFile(configFile) : new Map<string, string>();
  for (const o of OPTIONS) {
    const fromEnv = env[envName(o.key)];
    if (fromEnv !== undefined && fromEnv !== '') merged.set(o.key, fromEnv);
  }
  for (const [key, value] of cli.flags) merged.set(key, value);
  return buildConfig(merged);
}
