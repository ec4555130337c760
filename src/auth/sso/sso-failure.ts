/**
 * Why a single sign-on did not complete, as the audit trail records it. Each reason has a message
 * safe to show the person signing in: it says what to do, never what a token or assertion held.
 */
const REASONS = {
  unknown_provider: ['failure', 'no single sign-on provider by that name is enabled'],
  unknown_flow: ['failure', 'the sign-in attempt is unknown, expired or already used; start again'],
  browser_mismatch: ['denied', 'the sign-in was started in another browser; start again'],
  idp_refused: ['failure', 'the identity provider did not sign you in'],
  idp_unreachable: ['failure', 'the identity provider could not be reached; try again later'],
  invalid_response: ['failure', "the identity provider's answer could not be verified"],
  invalid_signature: ['failure', "the identity provider's answer is not signed by a trusted certificate"],
  issuer_mismatch: ['failure', "the identity provider's answer names another issuer"],
  audience_mismatch: ['failure', "the identity provider's answer is meant for another service"],
  in_response_to_mismatch: ['failure', "the identity provider's answer is not for this sign-in attempt"],
  recipient_mismatch: ['failure', "the identity provider's answer is meant for another address"],
  expired_response: ['failure', "the identity provider's answer has expired; start again"],
  missing_subject: ['denied', 'the identity provider did not name the account'],
  missing_email: ['denied', 'the identity provider did not give an e-mail address for this account'],
  email_not_verified: ['denied', 'the identity provider says this e-mail address is not verified'],
  user_disabled: ['denied', 'this account is disabled'],
  email_not_linked: [
    'denied',
    'an account with this e-mail address already exists and is not linked to this identity provider; ask an administrator',
  ],
} as const satisfies Record<string, readonly ['failure' | 'denied', string]>;

export type SsoFailureReason = keyof typeof REASONS;

export class SsoFailure extends Error {
  /** `denied`: the identity provider answered, but the identity may not sign in here. */
  readonly outcome: 'failure' | 'denied';

  constructor(
    readonly reason: SsoFailureReason,
    /** What went wrong in more detail, for the audit trail and the log (a library's message). */
    readonly detail?: string,
    /** The e-mail address the identity provider named, when it got that far. */
    readonly email?: string,
  ) {
    const [outcome, message] = REASONS[reason];
    super(message);
    this.name = 'SsoFailure';
    this.outcome = outcome;
  }
}

/** A library's error message cut down for the audit trail: one line, bounded. */
export function detailOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s+/g, ' ').slice(0, 300);
}
