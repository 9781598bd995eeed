/** USD for people: 4 decimals under $1 (token costs are small), else cents. */
export function formatUsd(usd: number): string {
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}
