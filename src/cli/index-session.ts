// What `lexembed index` and `lexembed search <index>` share: the folder's lock checked before the
// model loads (a busy index is refused at once), the index opened with the loaded model, closed
// and the model disposed however the work ends, and an IndexError (the user's to fix) made the
// usage error the CLI prints with exit status 2.
import { loadModelFolder } from '../node/runtime/load-model.ts';
import { IndexError, openIndex, type SearchIndex } from '../search-index/index.ts';
import { checkNotInUse } from '../search-index/location.ts';
import { deviceOptions, type DeviceConfig } from './device-options.ts';
import { UsageError } from './options.ts';

export async function withIndex<T>(
  command: string,
  location: string,
  config: DeviceConfig & { readonly model: string },
  open: { readonly create: boolean; readonly chunkTokens?: number },
  work: (index: SearchIndex) => Promise<T>,
): Promise<T> {
  try {
    checkNotInUse(location);
    const embedder = await loadModelFolder(config.model, { ...deviceOptions(config), batch: { tokens: 'auto', size: 'auto' } });
    try {
      const index = await openIndex(location, { embedder, ...open });
      try {
        return await work(index);
      } finally {
        await index.close();
      }
    } finally {
      await embedder.dispose();
    }
  } catch (error) {
    if (error instanceof IndexError) throw new UsageError(`${command}: ${error.message}`);
    throw error;
  }
}
