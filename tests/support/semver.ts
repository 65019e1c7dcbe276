// npm's semver (in node_modules through the dependencies; it ships no types): the two range checks
// the engines tests need.
import { createRequire } from 'node:module';

export const semver = createRequire(import.meta.url)('semver') as {
  /** Whether every version in `sub` is also in `sup`. */
  subset(sub: string, sup: string): boolean;
  satisfies(version: string, range: string): boolean;
};
