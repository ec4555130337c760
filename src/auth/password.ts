import { Algorithm, hash, verify } from '@node-rs/argon2';
import type { ZxcvbnFactory } from '@zxcvbn-ts/core';

/** argon2id with OWASP's first recommended configuration: 46 MiB of memory, one pass, one lane. */
const ARGON2_PARAMETERS = {
  algorithm: Algorithm.Argon2id,
  memoryCost: 47_104,
  timeCost: 1,
  parallelism: 1,
} as const;

export const PASSWORD_MIN_LENGTH = 12;
/** Long enough for any passphrase or generated password; bounded so hashing stays cheap to refuse. */
export const PASSWORD_MAX_LENGTH = 256;

let strength: Promise<ZxcvbnFactory> | undefined;

// The lists of common passwords are megabytes in memory: loaded the first time a password is set.
async function loadStrength(): Promise<ZxcvbnFactory> {
  const [{ ZxcvbnFactory }, { adjacencyGraphs, dictionary }] = await Promise.all([
    import('@zxcvbn-ts/core'),
    import('@zxcvbn-ts/language-common'),
  ]);
  return new ZxcvbnFactory({ dictionary: { ...dictionary }, graphs: adjacencyGraphs });
}

/**
 * Why a password is refused, or undefined when it is acceptable: a length outside the bounds, or
 * a password found in (or built from) the lists of common passwords, or one that contains the
 * user's own e-mail or name.
 */
export async function passwordProblem(
  password: string,
  userInputs: string[] = [],
): Promise<string | undefined> {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (length > PASSWORD_MAX_LENGTH) return `must be at most ${PASSWORD_MAX_LENGTH} characters`;
  strength ??= loadStrength();
  const result = (await strength).check(password, userInputs);
  if (result.score < 3) {
    return 'is too easy to guess (a common password, or built from one or from your name or e-mail); choose a longer, less predictable one';
  }
  return undefined;
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_PARAMETERS);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

let dummyHash: Promise<string> | undefined;
/**
 * Spends the same time as a real verification, for a login naming an unknown user, so the answer's
 * timing does not tell which e-mails exist.
 */
export async function verifyNothing(password: string): Promise<false> {
  dummyHash ??= hashPassword('a password that no account has, used to spend time');
  await verifyPassword(await dummyHash, password);
  return false;
}
