// The message of anything thrown: an Error's message, otherwise the value as text; and, for
// network failures, what failed beneath it.
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
  return String(error);
}

/**
 * The message with its cause's errno and message, which fetch's "fetch failed" hides in Node.
 * @example messageWithCause(err) // 'fetch failed (connect ECONNREFUSED 127.0.0.1:8080)'
 */
export function messageWithCause(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const parts = [typeof cause?.code === 'string' ? cause.code : '', typeof cause?.message === 'string' ? cause.message : ''].filter(Boolean);
  const unique = parts.length === 2 && parts[1]!.includes(parts[0]!) ? [parts[1]!] : parts;
  return unique.length ? `${messageOf(error)} (${unique.join(': ')})` : messageOf(error);
}
