// Request schemas are built per model name (the `model` field is a literal of it) and reused:
// one cache shape for every route's schema.

/** `create` memoised by model name. */
export function perModel<S>(create: (modelName: string) => S): (modelName: string) => S {
  const cache = new Map<string, S>();
  return (modelName) => {
    let schema = cache.get(modelName);
    if (!schema) cache.set(modelName, (schema = create(modelName)));
    return schema;
  };
}
