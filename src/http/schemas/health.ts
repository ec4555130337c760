import { Type } from 'typebox';
import { Timestamp } from './common.js';

export const Health = Type.Object({
  status: Type.String({ description: '`ok` when every check passes, else `unavailable`' }),
  version: Type.String({ description: 'v<major>.<minor>.<patch>' }),
  workers: Type.Integer({ description: 'Live workers of the fleet' }),
  pipelines_running: Type.Integer({
    description:
      "Pipelines in state running across the fleet: the caller's active project's; every project's with authentication off",
  }),
  checks: Type.Array(
    Type.Object({
      name: Type.String(),
      status: Type.String({ description: '`ok` or `failing`' }),
      erroring_since: Type.Union([Timestamp, Type.Null()]),
      message: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
});
