/**
 * What a file is, from its leading bytes: the raster images the media service takes, and PDFs
 * (what model input files are most often). Declared types are the caller's word; these are the bytes'.
 */

/** Image types accepted as inputs, by their leading bytes. */
export function sniffImage(head: Buffer): { contentType: string; extension: string } | null {
  if (
    head.length >= 8 &&
    head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
  )
    return { contentType: 'image/png', extension: 'png' };
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff)
    return { contentType: 'image/jpeg', extension: 'jpg' };
  if (head.length >= 6 && /^GIF8[79]a$/.test(head.subarray(0, 6).toString('latin1')))
    return { contentType: 'image/gif', extension: 'gif' };
  if (
    head.length >= 12 &&
    head.subarray(0, 4).toString('latin1') === 'RIFF' &&
    head.subarray(8, 12).toString('latin1') === 'WEBP'
  )
    return { contentType: 'image/webp', extension: 'webp' };
  return null;
}

/** A PDF begins with `%PDF-`. */
export const isPdf = (head: Buffer): boolean => head.subarray(0, 5).toString('latin1') === '%PDF-';
