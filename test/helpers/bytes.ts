/** Object bodies from and to strings, as the store tests write and read them (UTF-8). */
export const text = (s: string): Uint8Array => new TextEncoder().encode(s);
export const str = (b: Uint8Array): string => new TextDecoder().decode(b);
