import { validationFailed } from '../errors/app-error.js';

/**
 * How a pipeline reads its source's changes: `shared`, from the stream its source connection's
 * pipelines share (one replication slot and one walsender for all of them), or `own`, from a slot
 * of its own (its own walsender: its pace never touches the others', nor theirs its own).
 */
export type SourceSlot = 'shared' | 'own';

/** The slot mode of a pipeline created without `source.slot` that streams through its own publication. */
export const DEFAULT_SOURCE_SLOT: SourceSlot = 'shared';

/**
 * The slot mode of a pipeline created without `source.slot`. One naming a publication the user
 * made gets a slot of its own: a shared stream publishes through a publication it owns.
 */
export function defaultSourceSlot(publication: string | null | undefined): SourceSlot {
  return publication == null ? DEFAULT_SOURCE_SLOT : 'own';
}

/** The default rule, as the API and the documentation state it. */
export const SOURCE_SLOT_DEFAULT_RULE = `${DEFAULT_SOURCE_SLOT} when left out at creation, except own for a pipeline that names a publication`;

export const SHARED_SLOT_WITH_PUBLICATION =
  "cannot be shared with a publication: a shared stream publishes the union of its pipelines' tables " +
  'through a publication it owns, so a pipeline reading a publication the user made needs a slot of its own ' +
  '("slot": "own")';

export const SLOT_CHANGE_REFUSED =
  'the slot mode is chosen when a pipeline is created; create a new pipeline to change it';

/**
 * The slot mode a definition gets: the one given, else the stored one of an existing pipeline (a
 * replacement that leaves it out keeps it), else the default. A 422 on `source.slot` for a change
 * of an existing pipeline's mode (its position lives in its slot), and for a shared stream read
 * with a publication the user made (on `source.publication` when the mode was not given but kept).
 */
export function resolveSourceSlot(
  given: SourceSlot | undefined,
  publication: string | null,
  stored: SourceSlot | undefined,
): SourceSlot {
  if (given !== undefined && stored !== undefined && given !== stored) {
    throw validationFailed('source.slot', SLOT_CHANGE_REFUSED);
  }
  const slot = given ?? stored ?? defaultSourceSlot(publication);
  if (slot === 'shared' && publication !== null) {
    if (given !== undefined) throw validationFailed('source.slot', SHARED_SLOT_WITH_PUBLICATION);
    throw validationFailed(
      'source.publication',
      "cannot be named by a pipeline reading its source connection's shared stream: that stream publishes " +
        "the union of its pipelines' tables through a publication it owns, and the slot mode is chosen " +
        'when a pipeline is created; create a new pipeline with "slot": "own" to read this publication',
    );
  }
  return slot;
}
