/**
 * The longest Authorization (or x-api-key) header value looked at, in characters. Real keys are
 * ~73 characters and operator tokens a few dozen: anything past 1 KB is refused with a 401 before
 * it is hashed, looked up or cached.
 */
export const MAX_CREDENTIAL_LENGTH = 1024;

/** Whether a credential header value is too long to be a credential at all. */
export const credentialTooLong = (value: string | undefined): boolean =>
  value !== undefined && value.length > MAX_CREDENTIAL_LENGTH;
