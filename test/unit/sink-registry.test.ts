import { describe, expect, it } from 'vitest';
import { reachOf } from '../../src/runtime/connection-reach.js';
import {
  connectionTypeNames,
  findConnectionType,
  findSinkKind,
  sinkTypes,
} from '../../src/sinks/registry.js';
import { findSourceKind } from '../../src/source/registry.js';

describe('the sink registry', () => {
  it('registers each connection type beside its sink kind', () => {
    expect(connectionTypeNames()).toEqual(sinkTypes());
    for (const type of connectionTypeNames()) {
      expect([findConnectionType(type)?.type, findSinkKind(type)?.type]).toEqual([type, type]);
    }
    expect(findConnectionType('kafka')).toBeUndefined();
  });

  it("checks a source type's server through its source kind, any other type's through its own check", () => {
    for (const type of connectionTypeNames()) {
      const canBeSource = findSourceKind(type) !== undefined;
      expect([type, reachOf(type)?.canBeSource]).toEqual([type, canBeSource]);
      expect([type, findConnectionType(type)?.reach === undefined]).toEqual([type, canBeSource]);
    }
    expect(reachOf('kafka')).toBeUndefined();
  });
});
