/** What the service knows about one kind of connection. New sinks register here. */
export interface ConnectionType {
  /** The `type` value of the API. */
  type: string;
  /** URL schemes accepted in the DSN. */
  schemes: readonly string[];
  /** Whether a pipeline may read from it, write to it, or both. */
  roles: readonly ('source' | 'sink')[];
  /** Whether the DSN must name a database in its path. */
  requiresDatabase: boolean;
}

const TYPES: readonly ConnectionType[] = [
  {
    type: 'postgres',
    schemes: ['postgres', 'postgresql'],
    roles: ['source', 'sink'],
    requiresDatabase: true,
  },
];

const BY_TYPE = new Map(TYPES.map((t) => [t.type, t]));

export const connectionTypeNames = (): string[] => TYPES.map((t) => t.type);

export const findConnectionType = (type: string): ConnectionType | undefined => BY_TYPE.get(type);
