// What Dawn's Node binding needs before onnxruntime-web can use it.

/**
 * onnxruntime-web writes from views of its SharedArrayBuffer heap, which Dawn's
 * GPUQueue.writeBuffer rejects (unpatched, session.run() kills the process with SIGSEGV).
 */
export function patchWriteBuffer(globals: Record<string, unknown>): void {
  const queue = (globals.GPUQueue as { prototype: Record<string | symbol, unknown> } | undefined)?.prototype;
  const marker = Symbol.for('lexembed.writeBufferCopiesShared');
  if (!queue || queue[marker]) return;
  const original = queue.writeBuffer as (this: unknown, ...args: unknown[]) => unknown;
  queue.writeBuffer = function (this: unknown, buffer: unknown, offset: number, data: ArrayBufferView | ArrayBuffer, ...rest: unknown[]) {
    const shared = typeof SharedArrayBuffer !== 'undefined' && (data instanceof SharedArrayBuffer || (ArrayBuffer.isView(data) && data.buffer instanceof SharedArrayBuffer));
    let copy: unknown = data;
    if (shared && data instanceof SharedArrayBuffer) copy = data.slice(0);
    else if (shared && data instanceof DataView) copy = new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
    else if (shared) copy = (data as Uint8Array).slice(); // same element type, so dataOffset and size keep their units
    return original.call(this, buffer, offset, copy, ...rest);
  };
  queue[marker] = true;
}
