/**
 * The problems of the dashboard's create and edit forms, each at its field and in plain words:
 * what the browser can check before sending (the service's own rules: required fields, the name
 * rule, number ranges), and the service's 400 and 422 answers ("path: message") turned into the
 * same. Pure: the forms keep which field shows what.
 */

/** Field key → what is wrong with it. */
export type Problems = Record<string, string>;

// The service's name rule (src/naming.ts): what appears in URLs, logs and metric labels.
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
const NAME_MAX_LENGTH = 63;

/** What is wrong with a pipeline or connection name, or undefined when nothing is. */
export function nameProblem(name: string): string | undefined {
  const value = name.trim();
  if (value === '') return 'Enter a name.';
  if (value.length > NAME_MAX_LENGTH)
    return `Use at most ${NAME_MAX_LENGTH} characters (this has ${value.length}).`;
  if (!/^[A-Za-z0-9]/.test(value)) return 'Start the name with a letter or a digit.';
  if (!NAME_PATTERN.test(value)) return 'Use only letters, digits, "_" and "-" (no spaces).';
  return undefined;
}

/** The schemes each connection type's DSN may start with. */
const SCHEMES: Record<string, readonly string[]> = {
  postgres: ['postgres:', 'postgresql:'],
  mysql: ['mysql:'],
  redis: ['redis:', 'rediss:'],
  duckdb: ['duckdb:'],
  nats: ['nats:', 'tls:'],
  rabbitmq: ['amqp:', 'amqps:'],
  webhook: ['https:', 'http:'],
};

/** What is wrong with a DSN for a connection type, or undefined when the browser sees nothing wrong. */
export function dsnProblem(type: string, dsn: string): string | undefined {
  const value = dsn.trim();
  if (value === '') return 'Enter the DSN: the address of the server, as the example below shows.';
  const schemes = SCHEMES[type];
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(value)?.[0].toLowerCase();
  if (schemes && (!scheme || !schemes.includes(scheme))) {
    return `A ${type} DSN starts with ${schemes.map((s) => `${s}//`.replace('duckdb://', 'duckdb:')).join(' or ')}.`;
  }
  return undefined;
}

export interface ConnectionValues {
  name: string;
  type: string;
  dsn: string;
  /** Editing a stored connection: its name is fixed. */
  editing: boolean;
}

/** Every problem of a connection form the browser can see; `forTest` leaves the name out (a test needs none). */
export function connectionProblems(values: ConnectionValues, forTest = false): Problems {
  const problems: Problems = {};
  if (!values.editing && !forTest) {
    const name = nameProblem(values.name);
    if (name) problems.name = name;
  }
  if (!SCHEMES[values.type]) problems.type = 'Choose a connection type.';
  const dsn = dsnProblem(values.type, values.dsn);
  if (dsn) problems.dsn = dsn;
  return problems;
}

export interface PipelineValues {
  name: string;
  source: string;
  tables: readonly string[];
  sink: string;
  /** Number inputs: null (or NaN) when empty. */
  parallelism: number | null;
  partitionRows: number | null;
}

// The service's snapshot limits (src/pipelines/snapshot-options.ts).
const PARALLELISM = { min: 1, max: 32 };
const PARTITION_ROWS = { min: 1_000, max: 100_000_000 };

const isEmpty = (n: number | null) => n === null || Number.isNaN(n);

function rangeProblem(n: number | null, range: { min: number; max: number }): string | undefined {
  if (isEmpty(n)) return undefined;
  const value = n as number;
  if (!Number.isInteger(value)) return 'Enter a whole number.';
  if (value < range.min || value > range.max) {
    return `Enter a number from ${range.min.toLocaleString('en')} to ${range.max.toLocaleString('en')}, or leave it empty for the default.`;
  }
  return undefined;
}

/** Every problem of the create-pipeline form the browser can see. */
export function pipelineProblems(values: PipelineValues): Problems {
  const problems: Problems = {};
  const name = nameProblem(values.name);
  if (name) problems.name = name;
  if (!values.source) problems.source = 'Choose the source connection.';
  else if (values.tables.length === 0) problems.tables = 'Pick at least one table to replicate.';
  if (!values.sink) problems.sink = 'Choose the sink connection.';
  const parallelism = rangeProblem(values.parallelism, PARALLELISM);
  if (parallelism) problems.parallelism = parallelism;
  const partitionRows = rangeProblem(values.partitionRows, PARTITION_ROWS);
  if (partitionRows) problems.partitionRows = partitionRows;
  return problems;
}

/** The connection form's field of an API path (`tls.ca_cert`, `dsn`, …); null for none of them. */
export function connectionField(path: string): string | null {
  if (['name', 'type', 'dsn', 'tls.ca_cert', 'tls.client_cert', 'tls.client_key'].includes(path)) return path;
  if (path === 'password') return 'dsn';
  return null;
}

/** A service error, as much of it as the mapping needs (the dashboard's ApiError has these). */
export interface ServiceError {
  status: number;
  code: string;
  message: string;
}

// The service's schema wordings (ajv's, and the error handler's), each with its plain form.
const WORDINGS: readonly [RegExp, (m: RegExpExecArray) => string][] = [
  [/^is required$/, () => 'This is required.'],
  [/^must NOT have fewer than 1 characters?$/, () => 'This is required.'],
  [/^must NOT have fewer than (\d+) characters$/, (m) => `Use at least ${m[1]} characters.`],
  [/^must NOT have more than (\d+) characters$/, (m) => `Use at most ${m[1]} characters.`],
  [/^must be >= (\S+)$/, (m) => `Enter ${m[1]} or more.`],
  [/^must be <= (\S+)$/, (m) => `Enter ${m[1]} or less.`],
  [/^must be integer$/, () => 'Enter a whole number.'],
  [/^must be (string|number|boolean|object|array)$/, () => 'This value has the wrong form.'],
  [/^is not a known field$/, () => 'This field is not known to the service.'],
  [/^must be one of (.+)$/, (m) => `Choose one of ${m[1]}.`],
  [/^must be (\d+ to \d+ characters: .*)$/, (m) => `Use ${m[1]}.`],
];

/**
 * The JSON-schema wording of a validation message, in plain words; anything else is the
 * service's own sentence already (a refusal with the statements to run), kept as it is.
 */
export function plainWords(message: string): string {
  const text = message.trim();
  for (const [pattern, say] of WORDINGS) {
    const m = pattern.exec(text);
    if (m) return say(m);
  }
  return text;
}

/**
 * A service error that names a field, as `{field: message}` for the form (`toField` maps the
 * API's path to the form's field); {} when it names none (the form shows it as a whole).
 * A name that exists already is the name's problem.
 */
export function serviceProblems(error: ServiceError, toField: (path: string) => string | null): Problems {
  if (error.code === 'ALREADY_EXISTS') return { name: 'This name is taken: choose another.' };
  if (error.status !== 400 && error.status !== 422) return {};
  const match = /^([A-Za-z_][\w.[\]-]*):\s([\s\S]*)$/.exec(error.message);
  if (match) {
    const field = toField(match[1] as string);
    if (field && field !== 'other') return { [field]: plainWords(match[2] as string) };
    return {};
  }
  if (error.code === 'INVALID_DSN') {
    const field = toField('dsn');
    if (field) return { [field]: plainWords(error.message.replace(/^dsn:?\s*/i, '')) };
  }
  return {};
}

/** The problems still shown once a field changed: a field's problem clears as soon as it is edited. */
export function withoutChanged(
  problems: Problems,
  sent: Record<string, unknown>,
  now: Record<string, unknown>,
): Problems {
  return Object.fromEntries(
    Object.entries(problems).filter(
      ([field]) => !(field in now) || JSON.stringify(sent[field]) === JSON.stringify(now[field]),
    ),
  );
}
