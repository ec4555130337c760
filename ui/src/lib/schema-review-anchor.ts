/** The fragment of a pipeline page's address that leads to its schema review (`#schema-review`). */
export const REVIEW_ANCHOR = 'schema-review';
