/** A configuration the catalog cannot load: the message names the entry and field. */
export class CatalogError extends Error {}
