-- A second, independent LSP client: neovim's built-in one (NVIM 0.7: vim.lsp.start_client +
-- buf_attach_client). Opens the article's network, waits for cellscope's diagnostics and checks
-- that vim.diagnostic sees the same two errors as the Node protocol tests; then edits the buffer
-- (neovim computes the incremental didChange) and checks that the shape mismatch goes away, asks
-- for a hover, and stops the server (shutdown + exit, exit code 0).
--
-- Environment: CELLSCOPE_BIN (the server), CELLSCOPE_FILE (a copy of mnist_article_bug.py, in
-- CELLSCOPE_ROOT), RESULT_FILE (written with "ok" or the failure). Exits with :qa! on success,
-- :cq on failure.

local bin = assert(os.getenv('CELLSCOPE_BIN'), 'CELLSCOPE_BIN is not set')
local file = assert(os.getenv('CELLSCOPE_FILE'), 'CELLSCOPE_FILE is not set')
local root = assert(os.getenv('CELLSCOPE_ROOT'), 'CELLSCOPE_ROOT is not set')
local result_file = assert(os.getenv('RESULT_FILE'), 'RESULT_FILE is not set')

local log = {}
local function note(fmt, ...)
  local line = string.format(fmt, ...)
  table.insert(log, line)
  io.stderr:write('[nvim] ' .. line .. '\n')
end

local function finish(ok, message)
  local f = io.open(result_file, 'w')
  f:write((ok and 'ok' or 'FAILED: ' .. tostring(message)) .. '\n')
  for _, l in ipairs(log) do f:write(l .. '\n') end
  f:close()
  if ok then vim.cmd('qa!') else vim.cmd('cq') end
end

local function check(cond, fmt, ...)
  if not cond then error(string.format(fmt, ...), 2) end
end

-- Every publishDiagnostics the client receives, in order.
local published = {}
local default_handler = vim.lsp.handlers['textDocument/publishDiagnostics']
vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
  table.insert(published, result)
  note('publishDiagnostics version=%s count=%d', tostring(result.version), #result.diagnostics)
  return default_handler(err, result, ctx, config)
end

local function by_line(diags)
  local out = vim.deepcopy(diags)
  table.sort(out, function(a, b) return a.lnum < b.lnum end)
  return out
end

local function run()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  check(vim.bo[buf].filetype == 'python', 'filetype is %q, not python', vim.bo[buf].filetype)

  local exit_code
  local client_id = vim.lsp.start_client({
    name = 'cellscope',
    cmd = { bin, 'lsp', '--debounce-ms', '0' },
    root_dir = root,
    on_exit = function(code, signal) exit_code = code; note('server exited: code=%d signal=%d', code, signal) end,
  })
  check(client_id, 'vim.lsp.start_client failed')
  check(vim.lsp.buf_attach_client(buf, client_id), 'vim.lsp.buf_attach_client failed')

  -- Initialized, with the capabilities the server advertised.
  check(vim.wait(10000, function()
    local c = vim.lsp.get_client_by_id(client_id)
    return c and c.initialized
  end, 20), 'the client did not initialize')
  local client = vim.lsp.get_client_by_id(client_id)
  local caps = client.server_capabilities or client.resolved_capabilities
  note('server: %s', vim.inspect(client.server_capabilities and client.server_capabilities.positionEncoding))
  check(client.server_capabilities.hoverProvider == true, 'hoverProvider not advertised')
  check(caps ~= nil, 'no capabilities')

  -- The two errors of the article network.
  check(vim.wait(10000, function() return #vim.diagnostic.get(buf) >= 2 end, 20),
    'no diagnostics within 10 s (got %d publishes)', #published)
  local d = by_line(vim.diagnostic.get(buf))
  check(#d == 2, 'expected 2 diagnostics, got %d: %s', #d, vim.inspect(d))
  local api, shape = d[1], d[2]
  note('diagnostic: %d:%d-%d:%d %s %s', api.lnum, api.col, api.end_lnum, api.end_col, tostring(api.code), api.message)
  note('diagnostic: %d:%d-%d:%d %s %s', shape.lnum, shape.col, shape.end_lnum, shape.end_col, tostring(shape.code), shape.message)
  -- unknown-api on `ops.MaxPool2d`: line 11, columns 20-33.
  check(api.code == 'unknown-api', 'first code is %s', tostring(api.code))
  check(api.severity == vim.diagnostic.severity.ERROR, 'unknown-api severity %s', tostring(api.severity))
  check(api.lnum == 11 and api.col == 20 and api.end_lnum == 11 and api.end_col == 33,
    'unknown-api at %d:%d-%d:%d', api.lnum, api.col, api.end_lnum, api.end_col)
  check(api.source == 'cellscope', 'source %s', tostring(api.source))
  check(api.message:find('ops.MaxPool2d', 1, true), 'unknown-api message: %s', api.message)
  -- shape-mismatch on the `x` of self.fc1(x): line 21, columns 31-32.
  check(shape.code == 'shape-mismatch', 'second code is %s', tostring(shape.code))
  check(shape.severity == vim.diagnostic.severity.ERROR, 'shape-mismatch severity %s', tostring(shape.severity))
  check(shape.lnum == 21 and shape.col == 31 and shape.end_lnum == 21 and shape.end_col == 32,
    'shape-mismatch at %d:%d-%d:%d', shape.lnum, shape.col, shape.end_lnum, shape.end_col)
  check(shape.message:find('1600', 1, true) and shape.message:find('9216', 1, true), 'shape-mismatch message: %s', shape.message)
  local line21 = vim.api.nvim_buf_get_lines(buf, 21, 22, true)[1]
  check(line21:sub(shape.col + 1, shape.end_col) == 'x', 'the range covers %q', line21:sub(shape.col + 1, shape.end_col))
  local rel = shape.user_data and shape.user_data.lsp and shape.user_data.lsp.relatedInformation
  check(rel and rel[1] and rel[1].location.range.start.line == 13, 'relatedInformation: %s', vim.inspect(rel))

  -- Edit the buffer as a user would: 1600 -> 9216 on line 13. Neovim sends an incremental
  -- didChange it computed itself.
  local line13 = vim.api.nvim_buf_get_lines(buf, 13, 14, true)[1]
  local c = line13:find('1600', 1, true)
  check(c, 'line 13 has no 1600: %s', line13)
  local before = #published
  vim.api.nvim_buf_set_text(buf, 13, c - 1, 13, c + 3, { '9216' })
  check(vim.wait(10000, function()
    local now = vim.diagnostic.get(buf)
    return #published > before and #now == 1
  end, 20), 'the shape mismatch did not go away: %s', vim.inspect(vim.diagnostic.get(buf)))
  local left = vim.diagnostic.get(buf)
  check(left[1].code == 'unknown-api' and left[1].lnum == 11, 'left: %s', vim.inspect(left))
  local last = published[#published]
  check(last.version == vim.lsp.util.buf_versions[buf],
    'published version %s, buffer version %s', tostring(last.version), tostring(vim.lsp.util.buf_versions[buf]))
  note('after the edit: %d diagnostic(s), version %d', #left, last.version)

  -- A hover on `x` in construct, through neovim's request machinery.
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/hover', {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = 20, character = 8 },
  }, 10000)
  check(responses and responses[client_id], 'no hover response')
  local hover = responses[client_id].result
  check(hover and hover.contents.value:find('(1, 9216)', 1, true), 'hover: %s', vim.inspect(hover))
  note('hover: %s', hover.contents.value:gsub('\n', ' '))

  -- shutdown + exit: the server leaves with code 0.
  vim.lsp.stop_client(client_id)
  check(vim.wait(10000, function() return exit_code ~= nil end, 20), 'the server did not exit')
  check(exit_code == 0, 'server exit code %s', tostring(exit_code))
end

local ok, err = xpcall(run, debug.traceback)
finish(ok, err)
