// The runtime's dataset reader (graphcore/dataset.h) on files each test writes: the sources
// (MNIST idx, CIFAR-10 binary, ImageFolder with PNG/JPEG, .npy/.npz), every transform, every
// pipeline operation and the errors bad data and bad plans give. Expected values are MindSpore
// 2.10's (tests/training/check_dataset.py compares whole pipelines with it).
#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "graphcore/dataset.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using cellscope::testing::TempDir;
using graphcore::AttrValue;
using graphcore::DatasetOp;
using graphcore::DatasetPlan;
using graphcore::PlanCall;
using rt::DatasetReader;
using rt::DataType;
using rt::HostArray;

PlanCall call(std::string api, std::vector<graphcore::Attr> args = {}) {
  PlanCall c;
  c.api = std::move(api);
  c.args = std::move(args);
  c.file = "train.py";
  c.range.start.line = 9;  // reported as line 10
  return c;
}

DatasetOp map_op(std::vector<PlanCall> transforms, std::vector<std::string> input_columns = {}) {
  DatasetOp op;
  op.kind = DatasetOp::Kind::Map;
  op.call = call("Dataset.map");
  op.transforms = std::move(transforms);
  op.input_columns = std::move(input_columns);
  return op;
}

DatasetOp op(DatasetOp::Kind kind, std::vector<graphcore::Attr> args = {}) {
  DatasetOp o;
  o.kind = kind;
  o.call = call("Dataset.op", std::move(args));
  return o;
}

std::string write_bytes(const TempDir& dir, const fs::path& rel, const std::vector<uint8_t>& b) {
  return dir.write(rel, std::string(b.begin(), b.end()));
}

std::vector<uint8_t> be32(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

// An idx3 image file of `n` images of rows x cols (pixel = image*7 + index) and its label file.
void write_mnist(const TempDir& dir, const std::string& prefix, uint32_t n, uint32_t rows,
                 uint32_t cols, uint8_t label_base) {
  std::vector<uint8_t> img;
  for (uint32_t v : {2051u, n, rows, cols}) {
    auto b = be32(v);
    img.insert(img.end(), b.begin(), b.end());
  }
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p = 0; p < rows * cols; ++p) img.push_back(static_cast<uint8_t>(i * 7 + p));
  }
  std::vector<uint8_t> lab;
  for (uint32_t v : {2049u, n}) {
    auto b = be32(v);
    lab.insert(lab.end(), b.begin(), b.end());
  }
  for (uint32_t i = 0; i < n; ++i) lab.push_back(static_cast<uint8_t>(label_base + i));
  write_bytes(dir, "mnist/" + prefix + "-images-idx3-ubyte", img);
  write_bytes(dir, "mnist/" + prefix + "-labels-idx1-ubyte", lab);
}

DatasetPlan mnist_plan(const TempDir& dir, const std::string& usage, bool shuffle = false) {
  DatasetPlan p;
  p.source = call(
      "dataset.MnistDataset",
      {{"dataset_dir", (dir.path() / "mnist").string()}, {"usage", usage}, {"shuffle", shuffle}});
  return p;
}

std::vector<std::vector<HostArray>> all_rows(DatasetReader& r) {
  std::vector<std::vector<HostArray>> out;
  while (auto row = r.next_arrays()) out.push_back(std::move(*row));
  return out;
}

std::vector<double> values(const HostArray& a) {
  std::vector<double> v;
  for (int64_t i = 0; i < a.numel(); ++i) v.push_back(a.at(i));
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const rt::DatasetError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("other exception: ") + e.what();
  }
  return "no error";
}

// A NumpySlicesDataset over one .npy column "x" holding `a` stacked once (one row).
DatasetPlan one_row_plan(const TempDir& dir, const HostArray& a) {
  HostArray stacked = HostArray::make(a.dtype, [&] {
    std::vector<int64_t> s{1};
    s.insert(s.end(), a.shape.begin(), a.shape.end());
    return s;
  }());
  stacked.bytes = a.bytes;
  const fs::path path = dir.path() / "x.npy";
  rt::write_array_npy(path, stacked);
  DatasetPlan p;
  p.source =
      call("dataset.NumpySlicesDataset",
           {{"data", path.string()}, {"column_names", std::string("['x']")}, {"shuffle", false}});
  return p;
}

HostArray arange(DataType t, std::vector<int64_t> shape, double start = 0) {
  HostArray a = HostArray::make(t, std::move(shape));
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, start + static_cast<double>(i));
  return a;
}

// Applies `transforms` to `a` and returns the result (the dataset's one row).
HostArray apply(const TempDir& dir, const HostArray& a, std::vector<PlanCall> transforms,
                uint64_t seed = 0) {
  DatasetPlan p = one_row_plan(dir, a);
  p.ops.push_back(map_op(std::move(transforms), {"x"}));
  DatasetReader r(p, std::nullopt, seed);
  auto row = r.next_arrays();
  EXPECT_TRUE(row.has_value());
  return row ? (*row)[0] : HostArray{};
}

// ---- MNIST
// ---------------------------------------------------------------------------------------

TEST(DatasetMnist, ReadsColumnsDtypesAndUsageSplits) {
  TempDir dir;
  write_mnist(dir, "train", 5, 4, 3, 0);
  write_mnist(dir, "t10k", 3, 4, 3, 100);
  DatasetReader train(mnist_plan(dir, "train"), std::nullopt, 1);
  EXPECT_EQ(train.column_names(), (std::vector<std::string>{"image", "label"}));
  EXPECT_EQ(train.batches_per_epoch(), 5);
  auto rows = all_rows(train);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[1][0].type_str(), "(4, 3, 1) uint8");
  EXPECT_EQ(rows[1][1].type_str(), "() uint32");
  EXPECT_EQ(rows[1][0].at(0), 7);
  EXPECT_EQ(rows[1][0].at(11), 18);
  EXPECT_EQ(rows[4][1].at(0), 4);

  DatasetReader all(mnist_plan(dir, "all"), std::nullopt, 1);
  auto all_r = all_rows(all);
  ASSERT_EQ(all_r.size(), 8u);
  // MindSpore reads the t10k files first for usage='all'.
  EXPECT_EQ(all_r[0][1].at(0), 100);
  EXPECT_EQ(all_r[3][1].at(0), 0);

  DatasetReader test(mnist_plan(dir, "test"), std::nullopt, 1);
  EXPECT_EQ(all_rows(test).size(), 3u);

  // Tensors for the network: uint8 -> int32, uint32 -> int64.
  DatasetReader t2(mnist_plan(dir, "train"), std::nullopt, 1);
  auto tensors = t2.next();
  ASSERT_TRUE(tensors);
  EXPECT_EQ((*tensors)[0].dtype(), graphcore::DType::Int32);
  EXPECT_EQ((*tensors)[1].dtype(), graphcore::DType::Int64);
  EXPECT_EQ((*tensors)[0].shape(), (std::vector<int64_t>{4, 3, 1}));
}

TEST(DatasetMnist, NumSamplesAndSeededShuffle) {
  TempDir dir;
  write_mnist(dir, "train", 20, 2, 2, 0);
  DatasetPlan p = mnist_plan(dir, "train", true);
  p.source.args.push_back({"num_samples", int64_t{12}});
  auto labels = [&](uint64_t seed, int64_t epoch) {
    DatasetReader r(p, std::nullopt, seed);
    r.start_epoch(epoch);
    std::vector<double> out;
    for (auto& row : all_rows(r)) out.push_back(row[1].at(0));
    return out;
  };
  const auto a = labels(3, 0);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(std::set<double>(a.begin(), a.end()).size(), 12u);  // distinct samples
  EXPECT_EQ(a, labels(3, 0));                                   // reproducible
  EXPECT_NE(a, labels(4, 0));                                   // the seed matters
  EXPECT_NE(a, labels(3, 1));                                   // each epoch reshuffles
}

TEST(DatasetMnist, MissingDirectoryNamesTheExpectedFiles) {
  TempDir dir;
  const std::string e =
      error_of([&] { DatasetReader r(mnist_plan(dir, "train"), std::nullopt, 0); });
  EXPECT_NE(e.find("train.py:10: dataset.MnistDataset"), std::string::npos) << e;
  EXPECT_NE(e.find((dir.path() / "mnist").string()), std::string::npos) << e;
  EXPECT_NE(e.find("train-images-idx3-ubyte, train-labels-idx1-ubyte"), std::string::npos) << e;
}

TEST(DatasetMnist, TruncatedAndCorruptFilesAreErrors) {
  TempDir dir;
  write_mnist(dir, "train", 4, 3, 3, 0);
  const fs::path images = dir.path() / "mnist/train-images-idx3-ubyte";
  fs::resize_file(images, 16 + 4 * 9 - 5);
  std::string e = error_of([&] { DatasetReader r(mnist_plan(dir, "train"), std::nullopt, 0); });
  EXPECT_NE(e.find("expected 52 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("found 47"), std::string::npos) << e;
  EXPECT_NE(e.find(images.string()), std::string::npos) << e;

  write_mnist(dir, "train", 4, 3, 3, 0);
  std::fstream f(images, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(3);
  f.put(9);
  f.close();
  e = error_of([&] { DatasetReader r(mnist_plan(dir, "train"), std::nullopt, 0); });
  EXPECT_NE(e.find("bad magic number 2057"), std::string::npos) << e;

  write_mnist(dir, "train", 4, 3, 3, 0);
  fs::resize_file(dir.path() / "mnist/train-labels-idx1-ubyte", 10);
  e = error_of([&] { DatasetReader r(mnist_plan(dir, "train"), std::nullopt, 0); });
  EXPECT_NE(e.find("expected 12 bytes (4 labels after an 8-byte header), found 10"),
            std::string::npos)
      << e;

  e = error_of([&] {
    DatasetPlan p = mnist_plan(dir, "valid");
    DatasetReader r(p, std::nullopt, 0);
  });
  EXPECT_NE(e.find("usage must be 'train', 'test' or 'all'"), std::string::npos) << e;
}

TEST(DatasetMnist, DataDirOverrideReplacesDatasetDir) {
  TempDir dir;
  write_mnist(dir, "t10k", 2, 2, 2, 0);
  DatasetPlan p = mnist_plan(dir, "test");
  p.source.args[0].value = std::string("/nonexistent/mnist");
  DatasetReader r(p, dir.path() / "mnist", 0);
  EXPECT_EQ(all_rows(r).size(), 2u);
}

// ---- CIFAR-10
// ------------------------------------------------------------------------------------

TEST(DatasetCifar10, ReadsPlanesAsHwcAndChecksFileSizes) {
  TempDir dir;
  std::vector<uint8_t> file(static_cast<size_t>(10000) * 3073);
  for (size_t r = 0; r < 10000; ++r) {
    file[r * 3073] = static_cast<uint8_t>(r % 10);
    for (size_t p = 0; p < 3072; ++p) file[r * 3073 + 1 + p] = static_cast<uint8_t>((r + p) % 251);
  }
  write_bytes(dir, "cifar/data_batch_1.bin", file);
  DatasetPlan p;
  p.source = call("dataset.Cifar10Dataset", {{"dataset_dir", (dir.path() / "cifar").string()},
                                             {"usage", std::string("train")},
                                             {"shuffle", false},
                                             {"num_samples", int64_t{3}}});
  DatasetReader r(p, std::nullopt, 0);
  EXPECT_EQ(r.batches_per_epoch(), 3);
  auto rows = all_rows(r);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][0].type_str(), "(32, 32, 3) uint8");
  EXPECT_EQ(rows[2][1].type_str(), "() uint32");
  EXPECT_EQ(rows[2][1].at(0), 2);
  // HWC pixel (y, x, k) is plane k's byte y*32+x.
  EXPECT_EQ(rows[2][0].at((5 * 32 + 7) * 3 + 1), (2 + 1024 + 5 * 32 + 7) % 251);

  std::string e = error_of([&] {
    DatasetPlan q = p;
    q.source.args[1].value = std::string("test");
    DatasetReader r2(q, std::nullopt, 0);
  });
  EXPECT_NE(e.find("no CIFAR-10 binary files"), std::string::npos) << e;
  EXPECT_NE(e.find("test_batch.bin"), std::string::npos) << e;

  fs::resize_file(dir.path() / "cifar/data_batch_1.bin", uintmax_t{3073} * 10);
  e = error_of([&] { DatasetReader r2(p, std::nullopt, 0); });
  EXPECT_NE(
      e.find("data_batch_1.bin: expected 30730000 bytes (10000 records of 3073), found 30730"),
      std::string::npos)
      << e;
}

// ---- ImageFolder
// ---------------------------------------------------------------------------------

std::vector<uint8_t> encode_png(const std::vector<uint8_t>& pixels, uint32_t w, uint32_t h,
                                uint32_t format) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = w;
  img.height = h;
  img.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&img, nullptr, &size, 0, pixels.data(), 0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&img, out.data(), &size, 0, pixels.data(), 0, nullptr));
  out.resize(size);
  return out;
}

std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgb, uint32_t w, uint32_t h) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 98, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < h) {
    JSAMPROW row = const_cast<uint8_t*>(rgb.data()) + static_cast<size_t>(c.next_scanline) * w * 3;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<uint8_t> out(buf, buf + size);
  free(buf);
  return out;
}

std::vector<uint8_t> smooth_rgb(uint32_t w, uint32_t h) {
  std::vector<uint8_t> px;
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      px.push_back(static_cast<uint8_t>(x * 8));
      px.push_back(static_cast<uint8_t>(y * 8));
      px.push_back(128);
    }
  }
  return px;
}

TEST(DatasetImageFolder, DecodesPngAndJpegWithSortedClasses) {
  TempDir dir;
  const auto rgb = smooth_rgb(6, 4);
  write_bytes(dir, "images/zebra/a.jpg", encode_jpeg(rgb, 6, 4));
  write_bytes(dir, "images/ant/b.png", encode_png(rgb, 6, 4, PNG_FORMAT_RGB));
  std::vector<uint8_t> gray = {0, 50, 100, 150, 200, 250};
  write_bytes(dir, "images/ant/a.png", encode_png(gray, 3, 2, PNG_FORMAT_GRAY));
  std::vector<uint8_t> rgba = {10, 20, 30, 0, 40, 50, 60, 255};
  write_bytes(dir, "images/bee/c.png", encode_png(rgba, 2, 1, PNG_FORMAT_RGBA));
  DatasetPlan p;
  p.source = call(
      "dataset.ImageFolderDataset",
      {{"dataset_dir", (dir.path() / "images").string()}, {"decode", true}, {"shuffle", false}});
  DatasetReader r(p, std::nullopt, 0);
  EXPECT_EQ(r.batches_per_epoch(), 4);
  auto rows = all_rows(r);
  ASSERT_EQ(rows.size(), 4u);
  // ant/a.png, ant/b.png, bee/c.png, zebra/a.jpg: classes 0, 0, 1, 2.
  EXPECT_EQ(values(rows[0][1]), std::vector<double>{0});
  EXPECT_EQ(rows[0][1].type_str(), "() int32");
  EXPECT_EQ(values(rows[2][1]), std::vector<double>{1});
  EXPECT_EQ(values(rows[3][1]), std::vector<double>{2});
  // Grayscale replicated to RGB.
  EXPECT_EQ(rows[0][0].type_str(), "(2, 3, 3) uint8");
  EXPECT_EQ(values(rows[0][0]), (std::vector<double>{0, 0, 0, 50, 50, 50, 100, 100, 100, 150, 150,
                                                     150, 200, 200, 200, 250, 250, 250}));
  EXPECT_EQ(rows[1][0].bytes, rgb);
  // Alpha dropped, not composited.
  EXPECT_EQ(values(rows[2][0]), (std::vector<double>{10, 20, 30, 40, 50, 60}));
  // JPEG: lossy, close to the source at quality 98.
  ASSERT_EQ(rows[3][0].type_str(), "(4, 6, 3) uint8");
  for (size_t i = 0; i < rgb.size(); ++i) {
    EXPECT_NEAR(rows[3][0].bytes[i], rgb[i], 6) << i;
  }

  // decode=False yields the file's bytes.
  p.source.args[1].value = false;
  DatasetReader raw(p, std::nullopt, 0);
  auto first = raw.next_arrays();
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)[0].shape.size(), 1u);
  EXPECT_EQ((*first)[0].at(1), 'P');
}

TEST(DatasetImageFolder, BadImagesNameTheFile) {
  TempDir dir;
  auto png = encode_png(smooth_rgb(4, 4), 4, 4, PNG_FORMAT_RGB);
  png.resize(png.size() / 2);
  const std::string broken = write_bytes(dir, "images/a/broken.png", png);
  DatasetPlan p;
  p.source = call(
      "dataset.ImageFolderDataset",
      {{"dataset_dir", (dir.path() / "images").string()}, {"decode", true}, {"shuffle", false}});
  DatasetReader r(p, std::nullopt, 0);
  std::string e = error_of([&] { (void)r.next(); });
  EXPECT_NE(e.find("cannot decode PNG image " + broken), std::string::npos) << e;

  auto jpg = encode_jpeg(smooth_rgb(8, 8), 8, 8);
  jpg[3] ^= 0xFF;  // corrupt the first marker segment
  jpg.resize(40);
  fs::remove(broken);
  const std::string bad_jpg = write_bytes(dir, "images/a/bad.jpg", jpg);
  DatasetReader r2(p, std::nullopt, 0);
  e = error_of([&] { (void)r2.next(); });
  EXPECT_NE(e.find("cannot decode JPEG image " + bad_jpg), std::string::npos) << e;

  // A truncated JPEG: libjpeg would pad it with gray; the reader refuses it.
  auto cut = encode_jpeg(smooth_rgb(32, 32), 32, 32);
  cut.resize(cut.size() - 200);  // inside the scan data
  fs::remove(bad_jpg);
  const std::string cut_jpg = write_bytes(dir, "images/a/cut.jpg", cut);
  DatasetReader r5(p, std::nullopt, 0);
  e = error_of([&] { (void)r5.next(); });
  EXPECT_NE(e.find("cannot decode JPEG image " + cut_jpg + ": Premature end of JPEG file"),
            std::string::npos)
      << e;
  fs::remove(cut_jpg);
  const std::string txt = dir.write("images/a/notes.txt", "hello");
  DatasetReader r3(p, std::nullopt, 0);
  e = error_of([&] { (void)r3.next(); });
  EXPECT_NE(e.find("cannot decode image " + txt + ": not a JPEG or PNG"), std::string::npos) << e;

  // extensions filters the files.
  p.source.args.push_back({"extensions", std::string("['.png']")});
  e = error_of([&] { DatasetReader r4(p, std::nullopt, 0); });
  EXPECT_NE(e.find("no images in"), std::string::npos) << e;
}

// ---- NumpySlices
// ---------------------------------------------------------------------------------

uint32_t crc(const std::vector<uint8_t>& b) {
  return static_cast<uint32_t>(crc32(0, b.data(), static_cast<uInt>(b.size())));
}

void put16(std::vector<uint8_t>& o, uint32_t v) {
  o.push_back(static_cast<uint8_t>(v));
  o.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(std::vector<uint8_t>& o, uint32_t v) {
  put16(o, v & 0xffff);
  put16(o, v >> 16);
}

// A zip of the given members (name, contents), stored or deflated, as np.savez writes one.
std::vector<uint8_t> make_zip(
    const std::vector<std::pair<std::string, std::vector<uint8_t>>>& files, bool deflated) {
  std::vector<uint8_t> out, central;
  for (const auto& file : files) {
    const std::string& name = file.first;
    const std::vector<uint8_t>& data = file.second;
    std::vector<uint8_t> body = data;
    if (deflated) {
      z_stream zs{};
      deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      body.resize(deflateBound(&zs, static_cast<uLong>(data.size())));
      zs.next_in = const_cast<Bytef*>(data.data());
      zs.avail_in = static_cast<uInt>(data.size());
      zs.next_out = body.data();
      zs.avail_out = static_cast<uInt>(body.size());
      deflate(&zs, Z_FINISH);
      body.resize(zs.total_out);
      deflateEnd(&zs);
    }
    const auto offset = static_cast<uint32_t>(out.size());
    auto header = [&](std::vector<uint8_t>& o, bool central_entry) {
      put32(o, central_entry ? 0x02014b50 : 0x04034b50);
      if (central_entry) put16(o, 20);
      put16(o, 20);
      put16(o, 0);
      put16(o, deflated ? 8 : 0);
      put16(o, 0);
      put16(o, 0);
      put32(o, crc(data));
      put32(o, static_cast<uint32_t>(body.size()));
      put32(o, static_cast<uint32_t>(data.size()));
      put16(o, static_cast<uint32_t>(name.size()));
      put16(o, 0);
      if (central_entry) {
        put16(o, 0);
        put16(o, 0);
        put16(o, 0);
        put32(o, 0);
        put32(o, offset);
      }
      o.insert(o.end(), name.begin(), name.end());
    };
    header(out, false);
    out.insert(out.end(), body.begin(), body.end());
    header(central, true);
  }
  const auto cd = static_cast<uint32_t>(out.size());
  out.insert(out.end(), central.begin(), central.end());
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<uint32_t>(files.size()));
  put16(out, static_cast<uint32_t>(files.size()));
  put32(out, static_cast<uint32_t>(central.size()));
  put32(out, cd);
  put16(out, 0);
  return out;
}

std::vector<uint8_t> npy_bytes(const TempDir& dir, const HostArray& a) {
  const fs::path p = dir.path() / "tmp.npy";
  rt::write_array_npy(p, a);
  std::ifstream in(p, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(p);
  return b;
}

TEST(DatasetNumpySlices, ReadsNpzStoredAndDeflatedAndNpy) {
  TempDir dir;
  HostArray x = arange(DataType::Float32, {4, 3}, 0.5);
  HostArray y = arange(DataType::Int32, {4}, 10);
  for (bool deflated : {false, true}) {
    const std::string zip = write_bytes(
        dir, deflated ? "d.npz" : "s.npz",
        make_zip({{"x.npy", npy_bytes(dir, x)}, {"y.npy", npy_bytes(dir, y)}}, deflated));
    DatasetPlan p;
    p.source = call("dataset.NumpySlicesDataset", {{"data", zip}, {"shuffle", false}});
    DatasetReader r(p, std::nullopt, 0);
    EXPECT_EQ(r.column_names(), (std::vector<std::string>{"x", "y"}));
    auto rows = all_rows(r);
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[2][0].type_str(), "(3,) float32");
    EXPECT_EQ(values(rows[2][0]), (std::vector<double>{6.5, 7.5, 8.5}));
    EXPECT_EQ(rows[2][1].type_str(), "() int32");
    EXPECT_EQ(rows[2][1].at(0), 12);
  }
  // Separate .npy files; column names given; relative paths against the override directory.
  rt::write_array_npy(dir.path() / "x.npy", x);
  rt::write_array_npy(dir.path() / "y.npy", y);
  DatasetPlan p;
  p.source = call("dataset.NumpySlicesDataset", {{"data", std::string("x.npy; y.npy")},
                                                 {"column_names", std::string("['data', 'label']")},
                                                 {"shuffle", false}});
  DatasetReader r(p, dir.path(), 0);
  EXPECT_EQ(r.column_names(), (std::vector<std::string>{"data", "label"}));
  EXPECT_EQ(all_rows(r).size(), 4u);

  // Corrupt archives and mismatched columns are errors naming the file.
  std::vector<uint8_t> bad = make_zip({{"x.npy", npy_bytes(dir, x)}}, true);
  bad[40] ^= 0x55;
  const std::string badzip = write_bytes(dir, "bad.npz", bad);
  p.source = call("dataset.NumpySlicesDataset", {{"data", badzip}});
  std::string e = error_of([&] { DatasetReader r2(p, std::nullopt, 0); });
  EXPECT_NE(e.find(badzip), std::string::npos) << e;
  const std::string notzip = dir.write("not.npz", "just some text, certainly no zip archive");
  p.source = call("dataset.NumpySlicesDataset", {{"data", notzip}});
  e = error_of([&] { DatasetReader r2(p, std::nullopt, 0); });
  EXPECT_NE(e.find("no end-of-central-directory record"), std::string::npos) << e;
  rt::write_array_npy(dir.path() / "y5.npy", arange(DataType::Int32, {5}));
  p.source = call("dataset.NumpySlicesDataset", {{"data", std::string("x.npy;y5.npy")}});
  e = error_of([&] { DatasetReader r2(p, dir.path(), 0); });
  EXPECT_NE(e.find("column 'column_1' has 5 rows, the first column 4"), std::string::npos) << e;
}

// ---- Transforms
// ------------------------------------------------------------------------------------

TEST(DatasetTransforms, RescaleAndNormalize) {
  TempDir dir;
  HostArray img = arange(DataType::UInt8, {2, 2, 3});
  HostArray r = apply(dir, img, {call("vision.Rescale", {{"rescale", 0.5}, {"shift", -1.0}})});
  EXPECT_EQ(r.type_str(), "(2, 2, 3) float32");
  EXPECT_EQ(r.at(5), 1.5);
  HostArray n = apply(dir, img,
                      {call("vision.Normalize", {{"mean", std::string("[1, 2, 3]")},
                                                 {"std", std::string("[1, 2, 4]")}})});
  EXPECT_EQ(n.type_str(), "(2, 2, 3) float32");
  EXPECT_EQ(values(n)[3], 2);    // (3 - 1) / 1
  EXPECT_EQ(values(n)[4], 1);    // (4 - 2) / 2
  EXPECT_EQ(values(n)[5], 0.5);  // (5 - 3) / 4
  HostArray chw = arange(DataType::UInt8, {3, 2, 2});
  HostArray nc = apply(dir, chw,
                       {call("vision.Normalize", {{"mean", std::string("[1, 2, 3]")},
                                                  {"std", std::string("[1, 2, 4]")},
                                                  {"is_hwc", false}})});
  EXPECT_EQ(values(nc)[4], 1);  // channel 1: (4 - 2) / 2
  HostArray one = apply(dir, img, {call("vision.Normalize", {{"mean", 1.0}, {"std", 2.0}})});
  EXPECT_EQ(values(one)[11], 5);  // one value for every channel: (11 - 1) / 2
  std::string e = error_of([&] {
    apply(dir, arange(DataType::UInt8, {2, 2, 2}),
          {call("vision.Normalize",
                {{"mean", std::string("[1, 2, 3]")}, {"std", std::string("[1, 1, 1]")}})});
  });
  EXPECT_NE(e.find("train.py:10: vision.Normalize: column 'x' ((2, 2, 2) uint8): number of "
                   "channels (2) does not match the 3 values"),
            std::string::npos)
      << e;
}

TEST(DatasetTransforms, Hwc2ChwKeepsDtypeAndChecksRank) {
  TempDir dir;
  HostArray img = arange(DataType::UInt8, {2, 3, 2});
  HostArray r = apply(dir, img, {call("vision.HWC2CHW")});
  EXPECT_EQ(r.type_str(), "(2, 2, 3) uint8");
  EXPECT_EQ(values(r), (std::vector<double>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(apply(dir, arange(DataType::UInt8, {2, 3}), {call("vision.HWC2CHW")}).type_str(),
            "(2, 3) uint8");  // MindSpore passes (H, W) through
  std::string e = error_of([&] {
    apply(dir, arange(DataType::UInt8, {1, 2, 3, 4}), {call("vision.HWC2CHW")});
  });
  EXPECT_NE(e.find("vision.HWC2CHW: column 'x' ((1, 2, 3, 4) uint8): expects an image of rank 3"),
            std::string::npos)
      << e;
}

TEST(DatasetTransforms, ResizeMatchesMindSpore) {
  TempDir dir;
  // Values from MindSpore 2.10 (vision.Resize on the same arrays).
  HostArray a = arange(DataType::UInt8, {5, 6});
  EXPECT_EQ(values(apply(dir, a, {call("vision.Resize", {{"size", std::vector<int64_t>{3, 3}}})})),
            (std::vector<double>{2, 4, 6, 13, 15, 17, 22, 24, 26}));
  HostArray b = HostArray::make(DataType::UInt8, {3, 4});
  for (int64_t i = 0; i < 12; ++i) b.set(i, static_cast<double>((i * 23) % 256));
  EXPECT_EQ(values(apply(dir, b, {call("vision.Resize", {{"size", std::vector<int64_t>{5, 7}}})})),
            (std::vector<double>{0,   8,   21,  34,  48,  61,  69,  37,  45,  58,  71,  84,
                                 97,  106, 92,  100, 113, 127, 140, 153, 161, 147, 155, 168,
                                 182, 195, 208, 216, 184, 192, 205, 218, 232, 245, 253}));
  EXPECT_EQ(
      values(apply(dir, b,
                   {call("vision.Resize", {{"size", std::vector<int64_t>{5, 7}},
                                           {"interpolation", std::string("Inter.NEAREST")}})})),
      (std::vector<double>{0,   0,   23,  23,  46,  46,  69,  0,   0,   23,  23, 46,
                           46,  69,  92,  92,  115, 115, 138, 138, 161, 92,  92, 115,
                           115, 138, 138, 161, 184, 184, 207, 207, 230, 230, 253}));
  // Rows past the borders keep their weights (both taps clipped to the edge row), columns are
  // clamped: MindSpore's values for a 3x3 image upscaled to 5x6.
  HostArray g = HostArray::make(DataType::UInt8, {3, 3, 1});
  const std::vector<double> gv{8, 36, 210, 242, 63, 79, 222, 108, 69};
  for (size_t i = 0; i < gv.size(); ++i) g.set(static_cast<int64_t>(i), gv[i]);
  EXPECT_EQ(
      values(apply(dir, g, {call("vision.Resize", {{"size", std::vector<int64_t>{5, 6}}})})),
      (std::vector<double>{8,  15, 29, 79,  166, 210, 102, 88, 60, 74,  130, 158, 242, 197, 108,
                           67, 75, 79, 230, 195, 125, 86,  77, 73, 222, 193, 136, 98,  79,  69}));
  HostArray f = arange(DataType::Float32, {5, 6});
  EXPECT_EQ(values(apply(dir, f, {call("vision.Resize", {{"size", std::vector<int64_t>{3, 3}}})})),
            (std::vector<double>{2.5, 4.5, 6.5, 12.5, 14.5, 16.5, 22.5, 24.5, 26.5}));
  // One int: the shorter side, the other scaled and rounded down (30x40 -> 14x18).
  EXPECT_EQ(apply(dir, arange(DataType::UInt8, {30, 40, 3}),
                  {call("vision.Resize", {{"size", int64_t{14}}})})
                .type_str(),
            "(14, 18, 3) uint8");
  std::string e = error_of([&] {
    apply(dir, arange(DataType::UInt8, {4, 4}),
          {call("vision.Resize",
                {{"size", int64_t{2}}, {"interpolation", std::string("Inter.AREA")}})});
  });
  EXPECT_NE(e.find("interpolation area is not supported"), std::string::npos) << e;
  e = error_of([&] {
    apply(dir, arange(DataType::Int32, {4, 4}), {call("vision.Resize", {{"size", int64_t{2}}})});
  });
  EXPECT_NE(e.find("vision.Resize: column 'x' ((4, 4) int32): Resize reads uint8 or float32"),
            std::string::npos)
      << e;
}

TEST(DatasetTransforms, CenterCropRoundsDownAndPads) {
  TempDir dir;
  HostArray c = arange(DataType::UInt8, {3, 4, 1}, 1);
  // Larger than the image: zeros around it, offsets rounded down (as MindSpore).
  EXPECT_EQ(
      values(apply(dir, c, {call("vision.CenterCrop", {{"size", std::vector<int64_t>{5, 6}}})})),
      (std::vector<double>{0, 0, 0, 0, 0, 0,  0,  1,  2, 3, 4, 0, 0, 5, 6,
                           7, 8, 0, 0, 9, 10, 11, 12, 0, 0, 0, 0, 0, 0, 0}));
  HostArray big = arange(DataType::UInt8, {30, 40});
  HostArray r =
      apply(dir, big, {call("vision.CenterCrop", {{"size", std::vector<int64_t>{20, 21}}})});
  EXPECT_EQ(r.type_str(), "(20, 21) uint8");
  EXPECT_EQ(r.at(0), big.at(5 * 40 + 9));  // top (30-20)/2 = 5, left floor(19/2) = 9
}

TEST(DatasetTransforms, RandomCropAndFlipAreSeededWindows) {
  TempDir dir;
  HostArray img = HostArray::make(DataType::UInt8, {4, 4, 1});
  for (int64_t i = 0; i < 16; ++i) img.set(i, 9);
  std::set<std::vector<double>> seen;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    HostArray r =
        apply(dir, img,
              {call("vision.RandomCrop", {{"size", int64_t{4}}, {"padding", int64_t{2}}})}, seed);
    ASSERT_EQ(r.type_str(), "(4, 4, 1) uint8");
    const auto v = values(r);
    // A window of the padded image: a block of 9s, zeros around.
    EXPECT_EQ(std::count(v.begin(), v.end(), 0.0) + std::count(v.begin(), v.end(), 9.0), 16);
    seen.insert(v);
    EXPECT_EQ(
        values(apply(dir, img,
                     {call("vision.RandomCrop", {{"size", int64_t{4}}, {"padding", int64_t{2}}})},
                     seed)),
        v);
  }
  EXPECT_GT(seen.size(), 3u);
  std::string e = error_of([&] {
    apply(dir, img, {call("vision.RandomCrop", {{"size", int64_t{6}}})});
  });
  EXPECT_NE(e.find("crop size (6, 6) is larger than the padded image (4, 4)"), std::string::npos)
      << e;

  HostArray row = arange(DataType::UInt8, {1, 3, 2});
  EXPECT_EQ(values(apply(dir, row, {call("vision.RandomHorizontalFlip", {{"prob", 1.0}})})),
            (std::vector<double>{4, 5, 2, 3, 0, 1}));
  EXPECT_EQ(values(apply(dir, row, {call("vision.RandomHorizontalFlip", {{"prob", 0.0}})})),
            values(row));
}

TEST(DatasetTransforms, TypeCastWrapsAsNumpyAndOneHotKeepsDtype) {
  TempDir dir;
  HostArray f = HostArray::make(DataType::Float32, {4});
  for (auto [i, v] :
       std::vector<std::pair<int64_t, double>>{{0, 1.7}, {1, -1.7}, {2, 300.2}, {3, -5}}) {
    f.set(i, v);
  }
  // MindSpore: [1, 255, 44, 251] for uint8, [1, -1, 300, -5] for int32.
  EXPECT_EQ(
      values(apply(dir, f,
                   {call("transforms.TypeCast", {{"data_type", std::string("mstype.uint8")}})})),
      (std::vector<double>{1, 255, 44, 251}));
  HostArray i32 =
      apply(dir, f, {call("transforms.TypeCast", {{"data_type", std::string("int32")}})});
  EXPECT_EQ(i32.type_str(), "(4,) int32");
  EXPECT_EQ(values(i32), (std::vector<double>{1, -1, 300, -5}));

  HostArray label = HostArray::make(DataType::UInt32, {});
  label.set(0, 3);
  HostArray oh = apply(dir, label, {call("transforms.OneHot", {{"num_classes", int64_t{5}}})});
  EXPECT_EQ(oh.type_str(), "(5,) uint32");
  EXPECT_EQ(values(oh), (std::vector<double>{0, 0, 0, 1, 0}));
  std::string e = error_of([&] {
    apply(dir, f, {call("transforms.OneHot", {{"num_classes", int64_t{5}}})});
  });
  EXPECT_NE(e.find("transforms.OneHot: column 'x' ((4,) float32): OneHot reads integer labels"),
            std::string::npos)
      << e;
  e = error_of([&] {
    apply(dir, label, {call("transforms.OneHot", {{"num_classes", int64_t{2}}})});
  });
  EXPECT_NE(e.find("label 3 is outside [0, 2)"), std::string::npos) << e;
  e = error_of([&] {
    apply(dir, label, {call("transforms.TypeCast", {{"data_type", std::string("int33")}})});
  });
  EXPECT_NE(e.find("data_type must name a dtype"), std::string::npos) << e;
  e = error_of([&] { apply(dir, label, {call("vision.RandomRotation", {{"degrees", 5.0}})}); });
  EXPECT_NE(e.find("vision.RandomRotation: transform not supported"), std::string::npos) << e;
}

// ---- Pipeline operations
// ---------------------------------------------------------------------------

DatasetPlan slices_plan(const TempDir& dir, int64_t n) {
  rt::write_array_npy(dir.path() / "v.npy", arange(DataType::Int64, {n}));
  DatasetPlan p;
  p.source = call("dataset.NumpySlicesDataset",
                  {{"data", (dir.path() / "v.npy").string()}, {"shuffle", false}});
  return p;
}

std::vector<std::vector<double>> batches(DatasetReader& r) {
  std::vector<std::vector<double>> out;
  while (auto b = r.next_arrays()) out.push_back(values((*b)[0]));
  return out;
}

TEST(DatasetOps, BatchWithAndWithoutRemainder) {
  TempDir dir;
  DatasetPlan p = slices_plan(dir, 10);
  p.ops.push_back(op(DatasetOp::Kind::Batch, {{"batch_size", int64_t{4}}}));
  DatasetReader r(p, std::nullopt, 0);
  EXPECT_EQ(r.batches_per_epoch(), 3);
  EXPECT_EQ(batches(r), (std::vector<std::vector<double>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  p.ops[0].call.args.push_back({"drop_remainder", true});
  DatasetReader d(p, std::nullopt, 0);
  EXPECT_EQ(d.batches_per_epoch(), 2);
  EXPECT_EQ(batches(d).size(), 2u);
  auto t = DatasetReader(p, std::nullopt, 0).next();
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)[0].shape(), (std::vector<int64_t>{4}));
}

TEST(DatasetOps, BatchOfDifferentShapesNamesTheColumn) {
  TempDir dir;
  auto png = [&](uint32_t w, uint32_t h) {
    return encode_png(smooth_rgb(w, h), w, h, PNG_FORMAT_RGB);
  };
  write_bytes(dir, "images/a/1.png", png(4, 3));
  write_bytes(dir, "images/a/2.png", png(5, 3));
  DatasetPlan p;
  p.source = call(
      "dataset.ImageFolderDataset",
      {{"dataset_dir", (dir.path() / "images").string()}, {"decode", true}, {"shuffle", false}});
  p.ops.push_back(op(DatasetOp::Kind::Batch, {{"batch_size", int64_t{2}}}));
  DatasetReader r(p, std::nullopt, 0);
  const std::string e = error_of([&] { (void)r.next(); });
  EXPECT_NE(
      e.find("cannot batch column 'image': row 1 is (3, 5, 3) uint8, row 0 is (3, 4, 3) uint8"),
      std::string::npos)
      << e;
  // Resized to one shape, they batch.
  p.ops.insert(p.ops.begin(),
               map_op({call("vision.Resize", {{"size", std::vector<int64_t>{3, 3}}})}, {"image"}));
  DatasetReader ok(p, std::nullopt, 0);
  auto b = ok.next_arrays();
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)[0].type_str(), "(2, 3, 3, 3) uint8");
  EXPECT_EQ((*b)[1].type_str(), "(2,) int32");
}

TEST(DatasetOps, ShuffleRepeatTakeProject) {
  TempDir dir;
  DatasetPlan p = slices_plan(dir, 10);
  p.ops.push_back(op(DatasetOp::Kind::Shuffle, {{"buffer_size", int64_t{4}}}));
  auto order = [&](const DatasetPlan& plan, uint64_t seed) {
    DatasetReader r(plan, std::nullopt, seed);
    std::vector<double> out;
    for (auto& b : batches(r)) out.insert(out.end(), b.begin(), b.end());
    return out;
  };
  const auto s = order(p, 1);
  ASSERT_EQ(s.size(), 10u);
  EXPECT_EQ(std::set<double>(s.begin(), s.end()).size(), 10u);
  EXPECT_EQ(s, order(p, 1));
  EXPECT_NE(s, order(p, 2));
  // A buffer of 4 cannot move row 9 earlier than position 6.
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_LE(s[i], static_cast<double>(i) + 3);
  }

  DatasetPlan rp = slices_plan(dir, 3);
  rp.ops.push_back(op(DatasetOp::Kind::Repeat, {{"count", int64_t{2}}}));
  rp.ops.push_back(op(DatasetOp::Kind::Batch, {{"batch_size", int64_t{4}}}));
  DatasetReader r(rp, std::nullopt, 0);
  EXPECT_EQ(r.batches_per_epoch(), 2);  // repeat before batch: batches span the repetitions
  EXPECT_EQ(batches(r), (std::vector<std::vector<double>>{{0, 1, 2, 0}, {1, 2}}));

  DatasetPlan tp = slices_plan(dir, 10);
  tp.ops.push_back(op(DatasetOp::Kind::Batch, {{"batch_size", int64_t{3}}}));
  tp.ops.push_back(op(DatasetOp::Kind::Take, {{"count", int64_t{2}}}));
  tp.ops.push_back(op(DatasetOp::Kind::Repeat, {{"count", int64_t{2}}}));
  DatasetReader t(tp, std::nullopt, 0);
  EXPECT_EQ(t.batches_per_epoch(), 4);
  EXPECT_EQ(batches(t).size(), 4u);

  DatasetPlan inf = slices_plan(dir, 2);
  inf.ops.push_back(op(DatasetOp::Kind::Repeat));
  DatasetReader ri(inf, std::nullopt, 0);
  EXPECT_EQ(ri.batches_per_epoch(), std::nullopt);
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(ri.next_arrays());

  TempDir mdir;
  write_mnist(mdir, "train", 3, 2, 2, 5);
  DatasetPlan pp = mnist_plan(mdir, "train");
  DatasetOp proj = op(DatasetOp::Kind::Project);
  proj.columns = {"label", "image"};
  pp.ops.push_back(proj);
  DatasetReader pr(pp, std::nullopt, 0);
  EXPECT_EQ(pr.column_names(), (std::vector<std::string>{"label", "image"}));
  auto row = pr.next_arrays();
  ASSERT_TRUE(row);
  EXPECT_EQ((*row)[0].type_str(), "() uint32");
  pp.ops[0].columns = {"labels"};
  const std::string e = error_of([&] { DatasetReader bad(pp, std::nullopt, 0); });
  EXPECT_NE(e.find("no column 'labels' (columns: image, label)"), std::string::npos) << e;
}

TEST(DatasetOps, StartEpochRewindsAndReshuffles) {
  TempDir dir;
  DatasetPlan p = slices_plan(dir, 8);
  p.source.args[1].value = true;  // shuffle=True
  p.ops.push_back(op(DatasetOp::Kind::Batch, {{"batch_size", int64_t{8}}}));
  DatasetReader r(p, std::nullopt, 5);
  r.start_epoch(0);
  const auto e0 = batches(r);
  EXPECT_EQ(batches(r).size(), 0u);  // the epoch is over until the next start
  r.start_epoch(0);
  EXPECT_EQ(batches(r), e0);
  r.start_epoch(1);
  const auto e1 = batches(r);
  ASSERT_EQ(e1.size(), 1u);
  EXPECT_NE(e1, e0);
  auto sorted = e1[0];
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(DatasetPlanErrors, BadPlansFailBeforeReading) {
  TempDir dir;
  DatasetPlan p = slices_plan(dir, 4);
  p.ops.push_back(op(DatasetOp::Kind::Batch, {{"batch_size", int64_t{0}}}));
  std::string e = error_of([&] { DatasetReader r(p, std::nullopt, 0); });
  EXPECT_NE(e.find("train.py:10: Dataset.op: batch_size must be a positive integer"),
            std::string::npos)
      << e;
  DatasetPlan g;
  g.source = call("dataset.GeneratorDataset");
  g.opaque_reason = "GeneratorDataset over user code";
  e = error_of([&] { DatasetReader r(g, std::nullopt, 0); });
  EXPECT_NE(e.find("the dataset cannot be read: GeneratorDataset over user code"),
            std::string::npos)
      << e;
  DatasetPlan m = slices_plan(dir, 4);
  m.ops.push_back(map_op({call("vision.Rescale", {{"rescale", 1.0}, {"shift", 0.0}})}, {"image"}));
  e = error_of([&] { DatasetReader r(m, std::nullopt, 0); });
  EXPECT_NE(e.find("no column 'image' (columns: column_0)"), std::string::npos) << e;
}

}  // namespace
