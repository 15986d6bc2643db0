// A sibling module of the page, loaded by relative URL from the same folder.
export function formatCount(n) {
  return new Intl.NumberFormat('en-US').format(n);
}
