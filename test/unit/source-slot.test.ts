import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import {
  DEFAULT_SOURCE_SLOT,
  defaultSourceSlot,
  resolveSourceSlot,
  SLOT_CHANGE_REFUSED,
} from '../../src/pipelines/source-slot.js';

const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError)
      return { code: error.code, message: error.message, details: error.details };
    throw error;
  }
  throw new Error('not refused');
};

describe('source.slot', () => {
  it('defaults to own with a publication the user made, else to the default mode', () => {
    expect(defaultSourceSlot('shop_pub')).toBe('own');
    expect(defaultSourceSlot(null)).toBe(DEFAULT_SOURCE_SLOT);
    expect(defaultSourceSlot(undefined)).toBe(DEFAULT_SOURCE_SLOT);
    expect(resolveSourceSlot(undefined, null, undefined)).toBe(DEFAULT_SOURCE_SLOT);
    expect(resolveSourceSlot(undefined, 'shop_pub', undefined)).toBe('own');
  });

  it('takes the mode given at creation', () => {
    expect(resolveSourceSlot('shared', null, undefined)).toBe('shared');
    expect(resolveSourceSlot('own', null, undefined)).toBe('own');
    expect(resolveSourceSlot('own', 'shop_pub', undefined)).toBe('own');
  });

  it('refuses shared with a publication, on source.slot when given', () => {
    expect(refusal(() => resolveSourceSlot('shared', 'shop_pub', undefined))).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringMatching(/^source\.slot: .*needs a slot of its own/),
      details: { field: 'source.slot' },
    });
    // Kept from a shared pipeline: the publication is what the replacement adds.
    expect(refusal(() => resolveSourceSlot(undefined, 'shop_pub', 'shared'))).toMatchObject({
      details: { field: 'source.publication' },
    });
  });

  it('keeps the stored mode when left out, and refuses another', () => {
    expect(resolveSourceSlot(undefined, null, 'shared')).toBe('shared');
    expect(resolveSourceSlot(undefined, null, 'own')).toBe('own');
    expect(resolveSourceSlot(undefined, 'shop_pub', 'own')).toBe('own');
    expect(resolveSourceSlot('shared', null, 'shared')).toBe('shared');
    for (const [given, stored] of [
      ['own', 'shared'],
      ['shared', 'own'],
    ] as const) {
      expect(refusal(() => resolveSourceSlot(given, null, stored))).toEqual({
        code: 'VALIDATION_FAILED',
        message: `source.slot: ${SLOT_CHANGE_REFUSED}`,
        details: { field: 'source.slot' },
      });
    }
  });
});
