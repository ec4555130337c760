import { describe, expect, it } from 'vitest';
import { withDefaultCommand } from '../../src/cli/program.js';

const CLIENT = new Set(['get', 'status', 'start']);

describe('the command a command line names', () => {
  it('is serve with no command, or only flags', () => {
    expect(withDefaultCommand([], CLIENT)).toEqual(['serve']);
    expect(withDefaultCommand(['--port', '8000'], CLIENT)).toEqual(['serve', '--port', '8000']);
    expect(withDefaultCommand(['--help'], CLIENT)).toEqual(['--help']);
  });

  it('takes the flags that reach the service before a client command as well as after', () => {
    expect(withDefaultCommand(['--url', 'http://h:1', 'get', 'pipelines'], CLIENT)).toEqual([
      'get',
      'pipelines',
      '--url',
      'http://h:1',
    ]);
    expect(
      withDefaultCommand(['--url=http://h:1', '--token-file', 't', 'start', 'p', '--wait'], CLIENT),
    ).toEqual(['start', 'p', '--wait', '--url=http://h:1', '--token-file', 't']);
    expect(withDefaultCommand(['get', 'pipelines', '--url', 'http://h:1'], CLIENT)).toEqual([
      'get',
      'pipelines',
      '--url',
      'http://h:1',
    ]);
  });

  it('leaves a server flag that looks alike to serve', () => {
    // --url is not a server flag: serve refuses it, naming it, as before.
    expect(withDefaultCommand(['--url', 'http://h:1'], CLIENT)).toEqual(['serve', '--url', 'http://h:1']);
    expect(withDefaultCommand(['--url', 'x', 'migrate'], CLIENT)).toEqual(['serve', '--url', 'x', 'migrate']);
  });
});
