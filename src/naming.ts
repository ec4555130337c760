/** Pipeline and connection names: what appears in URLs, logs and metric labels. */
export const NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]*$';
export const NAME_MAX_LENGTH = 63;
export const NAME_RULE = `1 to ${NAME_MAX_LENGTH} characters: letters, digits, "_" and "-", starting with a letter or digit`;
