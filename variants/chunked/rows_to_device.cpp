#include "variants/chunked/rows_to_device.hpp"

#include "core/errors.hpp"
#include "variants/chunked/generated_chunk.hpp"

namespace mk::chunked {

bool rows_need_staging(const ChunkSource& source) {
  return !(source.generator && generated_on_device(*source.generator));
}

void rows_to_device(const ChunkSource& source, int64_t first, int64_t rows, float* out, cudaStream_t stream,
                    gpu::PinnedStaging* ring) {
  if (!rows_need_staging(source)) return generate_chunk_on_device(*source.generator, first, rows, out, stream);
  if (!ring) throw DeviceError("rows_to_device: this source's rows go through a pinned ring, and none was given");
  const size_t row_bytes = size_t(source.n) * sizeof(float);
  if (!source.generator)
    return ring->upload(out, source.rows + size_t(first) * size_t(source.n), size_t(rows) * row_bytes, stream);
  const GeneratorSpec& spec = *source.generator;
  ring->upload_made(out, size_t(rows) * row_bytes, row_bytes, stream, [&](char* piece, size_t offset, size_t length) {
    const int64_t begin = first + int64_t(offset / row_bytes);
    generate_rows(spec, begin, begin + int64_t(length / row_bytes), reinterpret_cast<float*>(piece));
  });
}

}  // namespace mk::chunked
