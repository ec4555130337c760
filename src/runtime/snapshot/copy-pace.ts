/**
 * Lets a copy give way to other work: before it passes a chunk of `rows` rows on, a copy asks for
 * its turn, and passes the chunk when the turn comes (at once when `turn` returns undefined).
 */
export interface CopyPace {
  turn(rows: number): Promise<void> | undefined;
}
