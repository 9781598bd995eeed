/**
 * Whether a channel token is easy to guess: the rule of `lurkbot security audit`
 * (`channel.<name>.weak-token`) and of the web channel, which refuses Tailscale Funnel with a
 * weak token. Generated secrets (35 random base64url characters) pass.
 */

const MIN_LENGTH = 24;
const MIN_DISTINCT = 10;
const COMMON = /(password|passwort|secret|changeme|letmein|qwerty|123456|abcdef|admin|token|lurkbot)/i;

/** Why a secret is easy to guess, or undefined. The text never contains the secret. */
export function tokenWeakness(token: string): string | undefined {
  if (token.length < MIN_LENGTH) return `it is shorter than ${MIN_LENGTH} characters`;
  const distinct = new Set(token).size;
  if (distinct < MIN_DISTINCT) return `it uses only ${distinct} different characters`;
  if (COMMON.test(token)) return "it contains a common word or sequence";
  return undefined;
}
