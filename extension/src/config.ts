// mindspore_config.json edits made from the editor: the input shapes a graph view saves. Pure
// (the text in, the text out); the caller asks the user first and writes atomically.

/** The config text with `inputs[key] = specs` (key: the model file relative to the workspace
 * folder, as the server reads it). Other keys and entries are kept; an absent or empty file
 * starts a new object. Throws when the existing text is not a JSON object (nothing is written
 * over a file the user would lose). */
export function withInputs(text: string | undefined, key: string, specs: string[]): string {
  let config: Record<string, unknown> = {};
  if (text !== undefined && text.trim() !== '') {
    const parsed: unknown = JSON.parse(text);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new Error('mindspore_config.json does not hold a JSON object');
    }
    config = parsed as Record<string, unknown>;
  }
  const inputs = config.inputs;
  if (inputs !== undefined && (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs))) {
    throw new Error('"inputs" in mindspore_config.json is not an object of file -> shapes');
  }
  config.inputs = { ...(inputs as Record<string, unknown> | undefined), [key]: specs };
  return JSON.stringify(config, null, 2) + '\n';
}
