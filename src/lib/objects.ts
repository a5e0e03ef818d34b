/**
 * `{ ...a, ...b }`, made by assignment onto `{}`. On Node 20's V8, an object literal that starts
 * with a spread and then adds keys the spread object lacks (`{ ...a, k: v }`, or a key set on a
 * spread copy later) gets a hidden class of its own on every call once its code is optimized:
 * ~0.5 µs a key, garbage for the collector, and every later read of the object megamorphic.
 * `Object.assign` onto `{}` follows one shared class (bench/NOTES.md §32). For per-call objects on
 * the hot path; elsewhere the spread reads better.
 *
 * An own `__proto__` key (JSON.parse makes one) would set the prototype by assignment instead of
 * being copied: such an object takes the spread.
 */
export function extended<A extends object, B extends object>(a: A, b: B): A & B {
  if (Object.hasOwn(a, '__proto__') || Object.hasOwn(b, '__proto__')) return { ...a, ...b };
  return Object.assign({}, a, b);
}
