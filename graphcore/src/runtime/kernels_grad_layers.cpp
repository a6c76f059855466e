// CPU kernels of the backward operators of the layers whose forward is one fused kernel in
// runtime/kernels.cpp: the recurrent layers (nn.LSTM / nn.GRU / nn.RNN: backward through time),
// nn.MultiheadAttention, nn.Conv3d, and the norms (ops.norm, ops.LpNorm). As in kernels_grad.cpp,
// each recomputes from the forward inputs what it needs (gate activations, attention
// probabilities) rather than the forward kernel keeping it.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/kernels.h"

namespace graphcore::runtime::kernels {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapM = Eigen::Map<RowMat>;
using MapCM = Eigen::Map<const RowMat>;

std::string_view grad_forward_op(const KernelCall& c) {
  if (auto op = attr_str(c.node, "forward_op")) {
    if (*op == "LSTM") return "LSTM";
    if (*op == "GRU") return "GRU";
    if (*op == "RNN") return "RNN";
  }
  fail(std::string(c.node.op) + ": the forward operator is not recorded");
}

float sigm(float v) { return 1.0f / (1.0f + std::exp(-v)); }

// op(a) op(b) on oneDNN (threaded, the CPU's widest vector unit; Eigen's kernels are built for
// SSE here): the recurrent layers' and the attention projections' products.
RowMat product(const RowMat& a, bool transpose_a, const RowMat& b, bool transpose_b) {
  Tensor ta({a.rows(), a.cols()}, DType::Float32), tb({b.rows(), b.cols()}, DType::Float32);
  std::copy_n(a.data(), a.size(), ta.data<float>());
  std::copy_n(b.data(), b.size(), tb.data<float>());
  const Tensor r = dnnl_ops::matmul(ta, tb, transpose_a, transpose_b);
  return MapCM(r.data<float>(), r.shape()[0], r.shape()[1]);
}

// One direction of one layer of a recurrent network: its weights and what the forward pass left
// at every step (recomputed): the gate activations, the hidden state before the step, and for
// the LSTM the cell state before and after it, for the GRU the recurrent part of the candidate.
struct RecurrentCell {
  int64_t gates = 1, H = 0, F = 0;
  RowMat wih, whh, bih, bhh;   // (G*H, F), (G*H, H), (1, G*H) each
  std::vector<RowMat> act;     // per step (N, G*H): the gates after their non-linearity
  std::vector<RowMat> h_prev;  // per step (N, H)
  std::vector<RowMat> c_prev;  // LSTM, per step (N, H)
  std::vector<RowMat> c_cur;   // LSTM, per step (N, H)
  std::vector<RowMat> rec_n;   // GRU, per step (N, H): W_hn h + b_hn
};

}  // namespace

// nn.LSTM / nn.GRU / nn.RNN backward through time (the forward kernel's equations, k_recurrent).
// Inputs: the forward inputs (x, [h0, [c0]]), then the gradients of its outputs (y, h_n, [c_n]).
// Outputs: the gradients of the forward inputs, then of each parameter in Node::params order.
// The forward is recomputed layer by layer keeping every step's gates; the backward then walks
// the layers from the last and each direction's steps in reverse, accumulating the weight
// gradients as products over the whole sequence.
void k_recurrent_grad(KernelCall& c) {
  const std::string_view op = grad_forward_op(c);
  const int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const size_t states = op == "LSTM" ? 2 : 1;
  if (c.inputs.size() < 2 + states) fail(std::string(op) + " gradient: missing inputs");
  const size_t n_fwd = c.inputs.size() - (1 + states);
  if (n_fwd > 1 + states) fail(std::string(op) + ": seq_length is not implemented");
  const Tensor x = as_float(in(c, 0));
  const auto hidden = attr_int(c.node, "hidden_size");
  if (!hidden || x.rank() != 3) fail(std::string(op) + " needs hidden_size and a 3-D input");
  const int64_t H = *hidden;
  const int64_t layers = attr_int(c.node, "num_layers").value_or(1);
  const int64_t dirs = attr_bool(c.node, "bidirectional").value_or(false) ? 2 : 1;
  const bool batch_first = attr_bool(c.node, "batch_first").value_or(false);
  const bool has_bias = attr_bool(c.node, "has_bias").value_or(true);
  const bool relu = attr_str(c.node, "nonlinearity").value_or("tanh") == "relu";
  const int64_t T = x.shape()[batch_first ? 1 : 0], N = x.shape()[batch_first ? 0 : 1];
  const int64_t F0 = x.shape()[2];
  const std::vector<int64_t> state_shape{layers * dirs, N, H};
  const auto state_in = [&](size_t k) -> Tensor {
    if (n_fwd <= 1 + k) return Tensor(state_shape, DType::Float32);
    Tensor s = as_float(c.inputs[1 + k]);
    if (s.shape() != state_shape) {
      fail(std::string(op) + ": the initial state must be " + shape_str(state_shape) + ", got " +
           s.type_str());
    }
    return s;
  };
  const Tensor h0 = state_in(0);
  const Tensor c0 = op == "LSTM" ? state_in(1) : Tensor(state_shape, DType::Float32);
  const Tensor dy = as_float(c.inputs[n_fwd]);
  const Tensor dhn = as_float(c.inputs[n_fwd + 1]);
  const Tensor dcn = op == "LSTM" ? as_float(c.inputs[n_fwd + 2]) : Tensor();
  if (dy.rank() != 3 || dy.shape()[2] != dirs * H || dhn.shape() != state_shape ||
      (op == "LSTM" && dcn.shape() != state_shape)) {
    fail(std::string(op) + " gradient: the output gradients " + dy.type_str() + ", " +
         dhn.type_str() + " do not match the layer");
  }

  // Forward, keeping each layer's input sequence (T*N, F) and each direction's steps.
  std::vector<RowMat> layer_in;
  std::vector<RecurrentCell> cells(static_cast<size_t>(layers * dirs));
  std::vector<std::string> names(static_cast<size_t>(layers * dirs));
  RowMat seq(T * N, F0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < N; ++b) {
      seq.row(t * N + b) =
          MapCM(x.data<float>() + (batch_first ? b * T + t : t * N + b) * F0, 1, F0).row(0);
    }
  }
  int64_t F = F0;
  for (int64_t l = 0; l < layers; ++l) {
    RowMat out(T * N, dirs * H);
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t slot = l * dirs + d;
      const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      names[static_cast<size_t>(slot)] = sfx;
      const Tensor* wih = find_param(c, "weight_ih" + sfx);
      const Tensor* whh = find_param(c, "weight_hh" + sfx);
      const Tensor* bih = has_bias ? find_param(c, "bias_ih" + sfx) : nullptr;
      const Tensor* bhh = has_bias ? find_param(c, "bias_hh" + sfx) : nullptr;
      if (wih == nullptr || whh == nullptr || (has_bias && (bih == nullptr || bhh == nullptr)))
        fail(std::string(op) + ": the parameters of layer " + std::to_string(l) + " are missing");
      if (wih->shape() != std::vector<int64_t>{gates * H, F} ||
          whh->shape() != std::vector<int64_t>{gates * H, H})
        fail(std::string(op) + ": weight_ih" + sfx + " is " + wih->type_str());
      RecurrentCell& cell = cells[static_cast<size_t>(slot)];
      cell.gates = gates;
      cell.H = H;
      cell.F = F;
      const Tensor Wih = as_float(*wih), Whh = as_float(*whh);
      cell.wih = MapCM(Wih.data<float>(), gates * H, F);
      cell.whh = MapCM(Whh.data<float>(), gates * H, H);
      cell.bih = RowMat::Zero(1, gates * H);
      cell.bhh = RowMat::Zero(1, gates * H);
      if (has_bias) {
        const Tensor Bi = as_float(*bih), Bh = as_float(*bhh);
        cell.bih = MapCM(Bi.data<float>(), 1, gates * H);
        cell.bhh = MapCM(Bh.data<float>(), 1, gates * H);
      }
      RowMat xp = product(seq, false, cell.wih, true);
      xp.rowwise() += cell.bih.row(0);
      RowMat h = MapCM(h0.data<float>() + slot * N * H, N, H);
      RowMat cs = MapCM(c0.data<float>() + slot * N * H, N, H);
      for (int64_t step = 0; step < T; ++step) {
        const int64_t t = d == 0 ? step : T - 1 - step;
        RowMat hp = product(h, false, cell.whh, true);
        hp.rowwise() += cell.bhh.row(0);
        RowMat a = xp.middleRows(t * N, N);
        cell.h_prev.push_back(h);
        if (gates == 4) {
          cell.c_prev.push_back(cs);
          a += hp;
          for (int64_t b = 0; b < N; ++b) {
            for (int64_t k = 0; k < H; ++k) {
              a(b, k) = sigm(a(b, k));
              a(b, H + k) = sigm(a(b, H + k));
              a(b, 2 * H + k) = std::tanh(a(b, 2 * H + k));
              a(b, 3 * H + k) = sigm(a(b, 3 * H + k));
              cs(b, k) = a(b, H + k) * cs(b, k) + a(b, k) * a(b, 2 * H + k);
              h(b, k) = a(b, 3 * H + k) * std::tanh(cs(b, k));
            }
          }
          cell.c_cur.push_back(cs);
        } else if (gates == 3) {
          cell.rec_n.emplace_back(hp.rightCols(H));
          for (int64_t b = 0; b < N; ++b) {
            for (int64_t k = 0; k < H; ++k) {
              a(b, k) = sigm(a(b, k) + hp(b, k));
              a(b, H + k) = sigm(a(b, H + k) + hp(b, H + k));
              a(b, 2 * H + k) = std::tanh(a(b, 2 * H + k) + a(b, k) * hp(b, 2 * H + k));
              h(b, k) = (1 - a(b, H + k)) * a(b, 2 * H + k) + a(b, H + k) * h(b, k);
            }
          }
        } else {
          a += hp;
          for (int64_t i = 0; i < a.size(); ++i) {
            float& v = a.data()[i];
            v = relu ? std::max(v, 0.0f) : std::tanh(v);
          }
          h = a;
        }
        cell.act.push_back(std::move(a));
        out.block(t * N, d * H, N, H) = h;
      }
    }
    layer_in.push_back(std::move(seq));
    seq = std::move(out);
    F = dirs * H;
  }

  // Backward. dseq: the gradient of the current layer's output sequence (T*N, dirs*H).
  RowMat dseq(T * N, dirs * H);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < N; ++b) {
      dseq.row(t * N + b) =
          MapCM(dy.data<float>() + (batch_first ? b * T + t : t * N + b) * dirs * H, 1, dirs * H)
              .row(0);
    }
  }
  Tensor dh0(state_shape, DType::Float32), dc0(state_shape, DType::Float32);
  std::vector<RowMat> dwih(cells.size()), dwhh(cells.size()), dbih(cells.size()),
      dbhh(cells.size());
  for (int64_t l = layers - 1; l >= 0; --l) {
    const RowMat& input = layer_in[static_cast<size_t>(l)];
    RowMat din = RowMat::Zero(T * N, input.cols());
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t slot = l * dirs + d;
      const auto s = static_cast<size_t>(slot);
      const RecurrentCell& cell = cells[s];
      // dA: the pre-activation gradients of the input projection per step; dR those of the
      // recurrent projection (the same but for the GRU's candidate, gated by r).
      RowMat dA(T * N, gates * H), dR(T * N, gates * H);
      RowMat dh = MapCM(dhn.data<float>() + slot * N * H, N, H);
      RowMat dc =
          op == "LSTM" ? RowMat(MapCM(dcn.data<float>() + slot * N * H, N, H)) : RowMat::Zero(N, H);
      std::vector<RowMat> h_at(static_cast<size_t>(T));  // the hidden state read at time t
      for (int64_t step = T - 1; step >= 0; --step) {
        const int64_t t = d == 0 ? step : T - 1 - step;
        const auto st = static_cast<size_t>(step);
        const RowMat& a = cell.act[st];
        dh += dseq.block(t * N, d * H, N, H);
        RowMat ga(N, gates * H), gr(N, gates * H);
        RowMat dh_direct = RowMat::Zero(N, H);
        for (int64_t b = 0; b < N; ++b) {
          for (int64_t k = 0; k < H; ++k) {
            const float g = dh(b, k);
            if (gates == 4) {
              const float i = a(b, k), f = a(b, H + k), gg = a(b, 2 * H + k), o = a(b, 3 * H + k);
              const float tc = std::tanh(cell.c_cur[st](b, k));
              const float dcs = dc(b, k) + g * o * (1 - tc * tc);
              ga(b, k) = dcs * gg * i * (1 - i);
              ga(b, H + k) = dcs * cell.c_prev[st](b, k) * f * (1 - f);
              ga(b, 2 * H + k) = dcs * i * (1 - gg * gg);
              ga(b, 3 * H + k) = g * tc * o * (1 - o);
              dc(b, k) = dcs * f;
            } else if (gates == 3) {
              const float r = a(b, k), z = a(b, H + k), n = a(b, 2 * H + k);
              const float dn = g * (1 - z) * (1 - n * n);
              const float dr = dn * cell.rec_n[st](b, k) * r * (1 - r);
              const float dz = g * (cell.h_prev[st](b, k) - n) * z * (1 - z);
              ga(b, k) = dr;
              ga(b, H + k) = dz;
              ga(b, 2 * H + k) = dn;
              gr(b, 2 * H + k) = dn * r;
              dh_direct(b, k) = g * z;
            } else {
              const float v = a(b, k);
              ga(b, k) = g * (relu ? (v > 0 ? 1.0f : 0.0f) : 1 - v * v);
            }
          }
        }
        if (gates == 3) {
          gr.leftCols(2 * H) = ga.leftCols(2 * H);
        } else {
          gr = ga;
        }
        dA.middleRows(t * N, N) = ga;
        dR.middleRows(t * N, N) = gr;
        h_at[static_cast<size_t>(t)] = cell.h_prev[st];
        dh = dh_direct + product(gr, false, cell.whh, false);
      }
      std::copy_n(dh.data(), N * H, dh0.data<float>() + slot * N * H);
      if (op == "LSTM") std::copy_n(dc.data(), N * H, dc0.data<float>() + slot * N * H);
      RowMat hprev(T * N, H);
      for (int64_t t = 0; t < T; ++t) hprev.middleRows(t * N, N) = h_at[static_cast<size_t>(t)];
      dwih[s] = product(dA, true, input, false);
      dwhh[s] = product(dR, true, hprev, false);
      dbih[s] = dA.colwise().sum();
      dbhh[s] = dR.colwise().sum();
      din += product(dA, false, cell.wih, false);
    }
    dseq = std::move(din);
  }
  Tensor dx(x.shape(), DType::Float32);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < N; ++b) {
      MapM(dx.data<float>() + (batch_first ? b * T + t : t * N + b) * F0, 1, F0) =
          dseq.row(t * N + b);
    }
  }
  emit(c, std::move(dx));
  if (n_fwd > 1) emit(c, std::move(dh0));
  if (n_fwd > 2) emit(c, std::move(dc0));
  // The parameter gradients in the node's parameter order.
  for (const ParamState* p : c.params) {
    const RowMat* g = nullptr;
    for (size_t s = 0; s < cells.size() && g == nullptr; ++s) {
      const auto is = [&](const std::string& stem) {
        const std::string want = stem + names[s];
        return p->name == want || (p->name.size() > want.size() && p->name.ends_with(want) &&
                                   p->name[p->name.size() - want.size() - 1] == '.');
      };
      if (is("weight_ih")) g = &dwih[s];
      if (is("weight_hh")) g = &dwhh[s];
      if (is("bias_ih")) g = &dbih[s];
      if (is("bias_hh")) g = &dbhh[s];
    }
    if (g == nullptr) fail(std::string(op) + " gradient: unknown parameter '" + p->name + "'");
    Tensor t(p->value.shape(), DType::Float32);
    if (t.numel() != g->size()) fail(std::string(op) + " gradient: '" + p->name + "' mismatch");
    std::copy_n(g->data(), g->size(), t.data<float>());
    emit(c, std::move(t));
  }
}

// nn.MultiheadAttention (the forward kernel's computation, k_multihead_attention): inputs query,
// key, value, then the gradients of the output and, when the node has it, of the attention
// weights (averaged over heads, or per head). Per batch and head, with P = softmax(s Q K^T):
// dV = P^T dC, dP = dC V^T (+ the weights' gradient), dS = P (dP - rowsum(dP P)), dQ = s dS K,
// dK = s dS^T Q; then through the projections. Outputs: dquery, dkey, dvalue, then the gradients
// of the parameters in Node::params order.
void k_multihead_attention_grad(KernelCall& c) {
  const bool with_weights = c.inputs.size() == 5;
  if (c.inputs.size() != 4 && !with_weights)
    fail("MultiheadAttention gradient: masks are not implemented by the CPU runtime");
  const auto e_attr = attr_int(c.node, "embed_dim");
  const auto h_attr = attr_int(c.node, "num_heads");
  if (!e_attr || !h_attr || *h_attr <= 0 || *e_attr % *h_attr != 0)
    fail("MultiheadAttention needs embed_dim divisible by num_heads");
  const int64_t E = *e_attr, heads = *h_attr, hd = E / heads;
  const bool bf = attr_bool(c.node, "batch_first").value_or(false);
  const Tensor q0 = as_float(c.inputs[0]), k0 = as_float(c.inputs[1]), v0 = as_float(c.inputs[2]);
  const Tensor dy = as_float(c.inputs[3]);
  if (q0.rank() != 3 || k0.rank() != 3 || v0.rank() != 3)
    fail("MultiheadAttention: unbatched (2-D) inputs are not implemented by the CPU runtime");
  const int64_t N = q0.shape()[bf ? 0 : 1], L = q0.shape()[bf ? 1 : 0], S = k0.shape()[bf ? 1 : 0];
  if (dy.numel() != N * L * E) fail("MultiheadAttention gradient " + dy.type_str());
  Tensor dw_out;
  bool per_head = false;
  if (with_weights) {
    dw_out = as_float(c.inputs[4]);
    per_head = dw_out.rank() == 4;
    if (dw_out.numel() != N * (per_head ? heads : 1) * L * S)
      fail("MultiheadAttention gradient: the weights' gradient is " + dw_out.type_str());
  }
  // (seq, batch, f) or (batch, seq, f) rows <-> (batch * seq, f) rows.
  const auto row_of = [&](int64_t b, int64_t i, int64_t len) {
    return bf ? b * len + i : i * N + b;
  };
  const auto batch_major = [&](const Tensor& t, int64_t len) {
    const int64_t f = t.shape()[2];
    RowMat m(N * len, f);
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t i = 0; i < len; ++i)
        m.row(b * len + i) = MapCM(t.data<float>() + row_of(b, i, len) * f, 1, f).row(0);
    }
    return m;
  };
  const auto to_layout = [&](const RowMat& m, int64_t len) {
    Tensor t(bf ? std::vector<int64_t>{N, len, m.cols()} : std::vector<int64_t>{len, N, m.cols()},
             DType::Float32);
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t i = 0; i < len; ++i)
        MapM(t.data<float>() + row_of(b, i, len) * m.cols(), 1, m.cols()) = m.row(b * len + i);
    }
    return t;
  };
  const Tensor* packed = find_param(c, "in_proj_weight");
  const Tensor* in_bias = find_param(c, "in_proj_bias");
  const char* own[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
  RowMat w[3];
  for (int which = 0; which < 3; ++which) {
    if (packed != nullptr) {
      const Tensor pw = as_float(*packed);
      if (pw.numel() != 3 * E * E) fail("MultiheadAttention: in_proj_weight is " + pw.type_str());
      w[which] = MapCM(pw.data<float>() + which * E * E, E, E);
    } else {
      const Tensor* wp = find_param(c, own[which]);
      if (wp == nullptr) fail(std::string("MultiheadAttention: ") + own[which] + " is missing");
      const Tensor t = as_float(*wp);
      w[which] = MapCM(t.data<float>(), E, t.shape()[1]);
    }
  }
  RowMat bin = RowMat::Zero(1, 3 * E);
  if (in_bias != nullptr) bin = MapCM(as_float(*in_bias).data<float>(), 1, 3 * E);
  const RowMat xq = batch_major(q0, L), xk = batch_major(k0, S), xv = batch_major(v0, S);
  if (xq.cols() != w[0].cols() || xk.cols() != w[1].cols() || xv.cols() != w[2].cols())
    fail("MultiheadAttention gradient: the inputs do not match the projection weights");
  const auto project = [&](const RowMat& x, int which) {
    RowMat y = product(x, false, w[which], true);
    y.rowwise() += bin.block(0, which * E, 1, E).row(0);
    return y;
  };
  const RowMat q = project(xq, 0), k = project(xk, 1), v = project(xv, 2);
  const Tensor* ow = find_param(c, "out_proj.weight");
  if (ow == nullptr) fail("MultiheadAttention: out_proj.weight is missing");
  const RowMat wo = MapCM(as_float(*ow).data<float>(), E, E);
  const RowMat dout = batch_major(
      dy.reshape(bf ? std::vector<int64_t>{N, L, E} : std::vector<int64_t>{L, N, E}), L);
  RowMat ctx(N * L, E);
  const RowMat dctx = product(dout, false, wo, false);
  RowMat dq(N * L, E), dk(N * S, E), dv(N * S, E);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const auto Q = q.block(b * L, h * hd, L, hd);
      const auto K = k.block(b * S, h * hd, S, hd);
      const auto V = v.block(b * S, h * hd, S, hd);
      RowMat P = Q * K.transpose() * scale;
      for (int64_t i = 0; i < L; ++i) {
        const float m = P.row(i).maxCoeff();
        P.row(i) = (P.row(i).array() - m).exp().matrix();
        P.row(i) /= P.row(i).sum();
      }
      ctx.block(b * L, h * hd, L, hd) = P * V;
      const auto dC = dctx.block(b * L, h * hd, L, hd);
      RowMat dP = dC * V.transpose();
      if (with_weights) {
        const float* g = dw_out.data<float>() + (per_head ? (b * heads + h) * L * S : b * L * S);
        dP +=
            per_head ? RowMat(MapCM(g, L, S)) : RowMat(MapCM(g, L, S) / static_cast<float>(heads));
      }
      dv.block(b * S, h * hd, S, hd) = P.transpose() * dC;
      RowMat dS = P.cwiseProduct(dP);
      for (int64_t i = 0; i < L; ++i) dS.row(i) -= P.row(i) * dS.row(i).sum();
      dq.block(b * L, h * hd, L, hd) = dS * K * scale;
      dk.block(b * S, h * hd, S, hd) = dS.transpose() * Q * scale;
    }
  }
  const RowMat* dproj[3] = {&dq, &dk, &dv};
  const RowMat* xin[3] = {&xq, &xk, &xv};
  emit(c, to_layout(product(dq, false, w[0], false), L));
  emit(c, to_layout(product(dk, false, w[1], false), S));
  emit(c, to_layout(product(dv, false, w[2], false), S));
  for (const ParamState* p : c.params) {
    const auto is = [&](std::string_view want) {
      return p->name == want || (p->name.size() > want.size() && p->name.ends_with(want) &&
                                 p->name[p->name.size() - want.size() - 1] == '.');
    };
    RowMat g;
    if (is("in_proj_weight")) {
      g.resize(3 * E, E);
      for (int which = 0; which < 3; ++which)
        g.middleRows(which * E, E) = product(*dproj[which], true, *xin[which], false);
    } else if (is("in_proj_bias")) {
      g.resize(1, 3 * E);
      for (int which = 0; which < 3; ++which)
        g.block(0, which * E, 1, E) = dproj[which]->colwise().sum();
    } else if (is("out_proj.weight")) {
      g = product(dout, true, ctx, false);
    } else if (is("out_proj.bias")) {
      g = dout.colwise().sum();
    } else {
      for (int which = 0; which < 3 && g.size() == 0; ++which)
        if (is(own[which])) g = product(*dproj[which], true, *xin[which], false);
    }
    if (g.size() == 0 || g.size() != p->value.numel()) {
      fail("MultiheadAttention gradient: parameter '" + p->name + "' is not one it computes");
    }
    Tensor t(p->value.shape(), DType::Float32);
    std::copy_n(g.data(), g.size(), t.data<float>());
    emit(c, std::move(t));
  }
}

// ops.norm / Tensor.norm (Norm) and ops.LpNorm: inputs x, the norm y and its gradient dy, both
// reshaped to the reduction with kept dims (they broadcast against x). Per element, as MindSpore
// 2.10's gradients give (checked with mindspore.grad): p-norm dy sign(x) |x|^(p-1) / y^(p-1)
// (the 2-norm dy x / y; ord None too), inf / -inf all of dy to the first element of largest /
// smallest |x| (sign(x) dy), ord 0 nothing. Where it has no derivative the subgradient 0: a
// zero norm (MindSpore's explicit ord=2 and LpNorm give 0 there; ord None gives NaN), x = 0 for
// p < 1 (NaN in MindSpore), and LpNorm's floor (a norm at or below epsilon).
void k_norm_grad(KernelCall& c) {
  const Tensor x = as_float(in(c, 0));
  const Tensor y = as_float(in(c, 1));
  const Tensor dy = as_float(in(c, 2));
  const std::vector<int64_t>& xs = x.shape();
  if (y.rank() != x.rank() || dy.shape() != y.shape())
    fail("Norm gradient: the norm " + y.type_str() + " does not keep the dims of " + x.type_str());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (y.shape()[i] != 1 && y.shape()[i] != xs[i])
      fail("Norm gradient: the norm " + y.type_str() + " is not a reduction of " + x.type_str());
  }
  const bool lp = attr_str(c.node, "forward_op").value_or("") == "LpNorm";
  double p = 2;
  double floor = 0;
  if (lp) {
    p = attr_float(c.node, "p").value_or(2);
    floor = attr_float(c.node, "epsilon").value_or(1e-12);
  } else if (const AttrValue* ord = c.node.find_attr("ord");
             ord != nullptr && !std::holds_alternative<std::monostate>(*ord)) {
    const auto s = attr_str(c.node, "ord");
    if (!(s && *s == "fro")) {
      const auto v = attr_float(c.node, "ord");
      if (!v) fail("Norm gradient: ord " + attr_to_string(*ord) + " is not implemented");
      p = *v;
    }
  }
  // The flat index of y (and dy) each element of x reduces into.
  const std::vector<int64_t> ys = bstrides(y.shape(), xs);
  Tensor& dx = emit(c, Tensor(xs, DType::Float32));
  auto* q = dx.data<float>();
  const auto* px = x.data<float>();
  const auto* py = y.data<float>();
  const auto* pg = dy.data<float>();
  std::vector<char> taken(static_cast<size_t>(y.numel()), 0);
  std::vector<int64_t> idx(xs.size(), 0);
  int64_t yi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = px[i], n = py[yi], g = pg[yi];
    const double sign = v > 0 ? 1 : v < 0 ? -1 : 0;
    double d = 0;
    if (std::isinf(p)) {
      if (!taken[static_cast<size_t>(yi)] && static_cast<float>(std::fabs(v)) == py[yi]) {
        taken[static_cast<size_t>(yi)] = 1;
        d = sign * g;
      }
    } else if (p != 0 && n > floor && v != 0) {
      d = p == 2 ? g * v / n : p == 1 ? g * sign : g * sign * std::pow(std::fabs(v) / n, p - 1);
    }
    q[i] = static_cast<float>(d);
    for (size_t k = xs.size(); k-- > 0;) {
      yi += ys[k];
      if (++idx[k] < xs[k]) break;
      yi -= ys[k] * xs[k];
      idx[k] = 0;
    }
  }
}

// nn.Conv3d / ops.conv3d on NCDHW (the forward kernel's geometry, k_conv3d): inputs x, [weight
// when functional,] dy; outputs dx, dweight and, when declared, dbias. Direct loops over the
// forward's taps, each output element's gradient scattered to the input and the weight (sums in
// double for the weight and bias).
void k_conv3d_grad(KernelCall& c) {
  const Tensor* wp = find_param(c, "weight");
  const bool functional = wp == nullptr;
  const Tensor x = as_float(in(c, 0));
  const Tensor wt = as_float(functional ? in(c, 1) : *wp);
  const Tensor dy = as_float(c.inputs.back());
  const Conv3DGeometry g = conv3d_geometry(c.node, x, wt, "Conv3D gradient");
  if (dy.numel() != g.out_numel())
    fail("Conv3D gradient " + dy.type_str() + " does not match the output");
  const int64_t oc = g.oc;
  const int64_t spatial = g.w.out[0] * g.w.out[1] * g.w.out[2];
  Tensor dx(x.shape(), DType::Float32);
  std::vector<double> dw(static_cast<size_t>(wt.numel()), 0.0), db(static_cast<size_t>(oc), 0.0);
  auto* pdx = dx.data<float>();
  const auto* px = x.data<float>();
  const auto* pw = wt.data<float>();
  const auto* pg = dy.data<float>();
  for (int64_t i = 0; i < dy.numel(); ++i) db[static_cast<size_t>((i / spatial) % oc)] += pg[i];
  g.for_each_tap([&](int64_t xi, int64_t wi, int64_t yi) {
    const float gv = pg[yi];
    pdx[xi] += gv * pw[wi];
    dw[static_cast<size_t>(wi)] += static_cast<double>(gv) * px[xi];
  });
  emit(c, std::move(dx));
  Tensor tw(wt.shape(), DType::Float32);
  for (int64_t i = 0; i < tw.numel(); ++i)
    tw.data<float>()[i] = static_cast<float>(dw[static_cast<size_t>(i)]);
  emit(c, std::move(tw));
  if (c.node.outputs.size() >= 3) {
    auto shape = out_shape(c, 2);
    Tensor tb(shape ? *shape : std::vector<int64_t>{oc}, DType::Float32);
    if (tb.numel() != oc) fail("Conv3D bias gradient " + tb.type_str());
    for (int64_t i = 0; i < oc; ++i)
      tb.data<float>()[i] = static_cast<float>(db[static_cast<size_t>(i)]);
    emit(c, std::move(tb));
  }
}

}  // namespace graphcore::runtime::kernels
