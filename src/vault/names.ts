/**
 * Secret names (digest §7): lowercase letters, digits and single underscores; starting with a
 * letter; no trailing underscore; 1–255 characters.
 */
export const SECRET_NAME_PATTERN = '^[a-z][a-z0-9]*(_[a-z0-9]+)*$';
export const SECRET_NAME_MAX = 255;

const NAME = new RegExp(SECRET_NAME_PATTERN);

/** The rule, as stated in error messages and the API reference. */
export const SECRET_NAME_RULE =
  'lowercase letters, digits and single underscores, starting with a letter, not ending with an underscore, 1–255 characters';

export const isSecretName = (name: string): boolean => name.length <= SECRET_NAME_MAX && NAME.test(name);

/**
 * What is wrong with `name`, or null when it is valid. The message never quotes the name (a value
 * pasted into the wrong place must not be echoed back or logged).
 */
export function secretNameProblem(name: string): string | null {
  if (isSecretName(name)) return null;
  const why =
    name.length === 0
      ? 'is empty'
      : name.length > SECRET_NAME_MAX
        ? `is longer than ${SECRET_NAME_MAX} characters`
        : /[A-Z]/.test(name)
          ? 'contains uppercase letters'
          : /[^a-z0-9_]/.test(name)
            ? 'contains a character other than a-z, 0-9 and _'
            : !/^[a-z]/.test(name)
              ? 'does not start with a letter'
              : name.includes('__')
                ? 'contains consecutive underscores'
                : 'ends with an underscore';
  return `${why}; a secret name is made of ${SECRET_NAME_RULE}`;
}
