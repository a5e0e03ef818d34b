import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * H.264 in an MP4 file, for the local generator's video route: what clients of OpenRouter's video
 * API expect (`@openrouter/sdk`'s `getVideoContent` takes `video/mp4` only). The encoder is
 * `h264-mp4-encoder` (x264-style H.264 and an MP4 muxer compiled to WebAssembly): pure JavaScript to
 * install, but CPU-bound for seconds per clip, so it runs on a thread of its own and the media
 * service's event loop keeps answering while it works.
 */
export interface Mp4Encoder {
  /** One RGBA frame (width × height × 4 bytes), in order. */
  add(frame: Uint8Array): void;
  /** Ends the clip: the MP4 file. */
  finish(): Promise<Buffer>;
  /** Stops the thread (a cancelled job); `finish` then rejects. */
  abort(): void;
}

/** The thread's code (CommonJS, evaluated): the encoder is required by its resolved path. */
const THREAD = `
const { workerData, parentPort } = require('node:worker_threads');
const HME = require(workerData.encoder);
let chain = HME.createH264MP4Encoder().then((enc) => {
  enc.width = workerData.width;
  enc.height = workerData.height;
  enc.frameRate = workerData.fps;
  enc.quantizationParameter = workerData.quantizer;
  enc.initialize();
  return enc;
});
parentPort.on('message', (m) => {
  chain = chain.then((enc) => {
    if (m.frame) {
      enc.addFrameRgba(m.frame);
      return enc;
    }
    enc.finalize();
    const out = enc.FS.readFile(enc.outputFilename);
    enc.delete();
    parentPort.postMessage({ mp4: out }, [out.buffer]);
    return null;
  }).catch((err) => {
    parentPort.postMessage({ error: String((err && err.message) || err) });
    return null;
  });
});
`;

const encoderPath = createRequire(import.meta.url).resolve('h264-mp4-encoder');

/**
 * Starts encoding a `width` × `height` clip at `fps` (both sides even, as H.264's 4:2:0 needs).
 * `quantizer`: 10 (best) to 51; 28 keeps the generator's flat colours clean at a small size.
 */
export function mp4Encoder(width: number, height: number, fps: number, quantizer = 28): Mp4Encoder {
  const worker = new Worker(THREAD, {
    eval: true,
    workerData: { encoder: encoderPath, width, height, fps, quantizer },
  });
  const result = new Promise<Buffer>((resolve, reject) => {
    worker.once('message', (m: { mp4?: Uint8Array; error?: string }) => {
      if (m.mp4) resolve(Buffer.from(m.mp4.buffer, m.mp4.byteOffset, m.mp4.byteLength));
      else reject(new Error(`the MP4 encoder failed: ${m.error}`));
    });
    worker.once('error', reject);
    worker.once('exit', () => reject(new Error('the MP4 encoder stopped before the clip was finished')));
  });
  // Settled on abort: nobody may be waiting for it then.
  result.catch(() => {});
  return {
    add: (frame) => worker.postMessage({ frame }),
    async finish() {
      worker.postMessage({ finish: true });
      try {
        return await result;
      } finally {
        void worker.terminate();
      }
    },
    abort: () => void worker.terminate(),
  };
}
