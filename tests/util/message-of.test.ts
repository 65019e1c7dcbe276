import { expect, it } from 'vitest';
import { messageOf } from '../../src/util/message-of.ts';

it('messageOf reads an Error, an error-like object, or anything else as text', () => {
  expect(messageOf(new TypeError('bad'))).toBe('bad');
  expect(messageOf({ message: 'from a worker' })).toBe('from a worker');
  expect(messageOf('plain')).toBe('plain');
  expect(messageOf(undefined)).toBe('undefined');
});
