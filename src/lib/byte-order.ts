/**
 * Compare two strings in UTF-8 byte order (which equals Unicode code point
 * order), the order every contract list uses (docs/seeds/task-graph-v1.md §3: "all lists
 * sorted by id (byte order, so `after-alpha` < `alpha`)"). For the ASCII identifiers of the contract this is exactly `<`/`>`;
 * it only differs from UTF-16 code-unit order for astral characters in
 * patterns. Never locale-aware.
 */
export function compareByteOrder(left: string, right: string): number {
  if (left === right) return 0;
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index += 1) {
    let a = left.charCodeAt(index);
    let b = right.charCodeAt(index);
    if (a === b) continue;
    if (a >= 0xd800 && b >= 0xd800) {
      // Surrogates (astral code points) sort after U+E000..U+FFFF in code point order.
      a = a >= 0xe000 ? a - 0x800 : a + 0x2000;
      b = b >= 0xe000 ? b - 0x800 : b + 0x2000;
    }
    return a < b ? -1 : 1;
  }
  return left.length < right.length ? -1 : 1;
}

/** A new array of the values sorted in byte order. */
export function sortByteOrder(values: Iterable<string>): string[] {
  return [...values].sort(compareByteOrder);
}
