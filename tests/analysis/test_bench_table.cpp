// Bench tables: ratio and scaling-efficiency columns, Markdown / CSV / JSON, the chart built from the rows.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "analysis/bench_table.hpp"
#include "xml_checker.hpp"

namespace ddpx {
namespace {

std::vector<BenchRow> rows() {
  return {
      {"fp32, no DDP", "fp32", 1, 12.5, 11.9},
      {"fp32, DDP", "fp32", 1, 12.4, 11.6},
      {"fp32, bucket 2000 MB", "fp32", 2, 11.25, 11.06},
      {"bf16, hook bf16, bucket 25 MB", "bf16", 2, 14.0, std::nullopt},
  };
}

TEST(BenchTable, RatioAndScalingEfficiency) {
  const std::vector<BenchRow> r = rows();
  EXPECT_NEAR(*pytorch_ratio(r[0]), 12.5 / 11.9, 1e-12);
  EXPECT_FALSE(pytorch_ratio(r[3]).has_value());
  EXPECT_FALSE(scaling_efficiency(r, 0).has_value());              // one GPU
  EXPECT_NEAR(*scaling_efficiency(r, 2), 11.25 / 12.5, 1e-12);     // over the fastest fp32 1-GPU row
  EXPECT_FALSE(scaling_efficiency(r, 3).has_value());              // no bf16 1-GPU row
}

TEST(BenchTable, Markdown) {
  const std::string md = bench_markdown(rows());
  EXPECT_EQ(md.substr(0, md.find('\n')),
            "| configuration | GPUs | precision | ddpx steps/s | PyTorch steps/s | ddpx / PyTorch | scaling efficiency "
            "| images/s | MFU |");
  EXPECT_NE(md.find("| fp32, no DDP | 1 | fp32 | 12.50 | 11.90 | 1.05x | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fp32, bucket 2000 MB | 2 | fp32 | 11.25 | 11.06 | 1.02x | 90% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| bf16, hook bf16, bucket 25 MB | 2 | bf16 | 14.00 | - | - | - |"), std::string::npos) << md;
  EXPECT_EQ(std::count(md.begin(), md.end(), '\n'), 6);  // header, rule, 4 rows
}

TEST(BenchTable, CsvQuotesAndLeavesMissingEmpty) {
  const std::string csv = bench_csv(rows());
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "config,model,gpus,precision,hook,bucket_mb,p2p_off,ddpx_steps_per_s,pytorch_steps_per_s,ratio,"
            "scaling_efficiency,images_per_s,mfu");
  EXPECT_NE(csv.find("\"fp32, bucket 2000 MB\",,2,fp32,,,0,11.2500,11.0600,1.0172,0.9000,,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"bf16, hook bf16, bucket 25 MB\",,2,bf16,,,0,14.0000,,,,,\n"), std::string::npos) << csv;
}

// Model, precision, hook, bucket cap and P2P are columns of their own (a spreadsheet groups by them), not only
// parts of the packed "config" name.
TEST(BenchTable, CsvAndJsonGiveEachSettingItsOwnColumn) {
  std::vector<BenchRow> r = rows();
  r[3].model = "vit_l_32", r[3].hook = "bf16", r[3].bucket_mb = 25, r[3].p2p_off = true;
  EXPECT_NE(bench_csv(r).find("\"bf16, hook bf16, bucket 25 MB\",vit_l_32,2,bf16,bf16,25,1,14.0000,"), std::string::npos)
      << bench_csv(r);
  const nlohmann::json j = bench_json(r);
  EXPECT_EQ(j[3]["model"], "vit_l_32");
  EXPECT_EQ(j[3]["hook"], "bf16");
  EXPECT_EQ(j[3]["bucket_mb"].get<double>(), 25);
  EXPECT_EQ(j[3]["p2p_off"], true);
  EXPECT_EQ(j[0]["hook"], nullptr);  // no DDP: no hook, no bucket
  EXPECT_EQ(j[0]["bucket_mb"], nullptr);
}

// images/s and MFU are columns of their own in every format, "-" / empty / null where unknown; a non-positive
// value is refused naming the row.
TEST(BenchTable, ImagesPerSecondAndMfuColumns) {
  std::vector<BenchRow> r = rows();
  r[0].images_per_s = 3293.0, r[0].mfu = 0.307;
  const std::string md = bench_markdown(r);
  EXPECT_NE(md.find("| fp32, no DDP | 1 | fp32 | 12.50 | 11.90 | 1.05x | - | 3293 | 30.7% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fp32, DDP | 1 | fp32 | 12.40 | 11.60 | 1.07x | - | - | - |"), std::string::npos) << md;
  EXPECT_NE(bench_csv(r).find("\"fp32, no DDP\",,1,fp32,,,0,12.5000,11.9000,1.0504,,3293.00,0.3070\n"),
            std::string::npos) << bench_csv(r);
  const nlohmann::json j = bench_json(r);
  EXPECT_DOUBLE_EQ(j[0]["mfu"].get<double>(), 0.307);
  EXPECT_EQ(j[1]["images_per_s"], nullptr);
  r[1].mfu = -0.1;
  try {
    bench_markdown(r);
    ADD_FAILURE() << "a negative MFU was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bench row 'fp32, DDP': MFU must be positive"), std::string::npos) << e.what();
  }
}

TEST(BenchTable, JsonUsesNullForMissing) {
  const nlohmann::json j = bench_json(rows());
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[3]["pytorch_steps_per_s"], nullptr);
  EXPECT_NEAR(j[2]["scaling_efficiency"].get<double>(), 0.9, 1e-12);
  EXPECT_EQ(j[2]["gpus"], 2);
}

TEST(BenchTable, ChartNamesEveryRow) {
  const BarChart chart = bench_chart(rows(), "ViT-L/32 on H200");
  ASSERT_EQ(chart.categories.size(), 4u);
  EXPECT_EQ(chart.categories[2], "fp32, bucket 2000 MB (2 GPUs)");
  EXPECT_EQ(chart.categories[0], "fp32, no DDP (1 GPU)");
  ASSERT_EQ(chart.series.size(), 2u);
  EXPECT_EQ(chart.series[1].name, "PyTorch");
  EXPECT_EQ(chart.notes[2], "eff 90%");
  EXPECT_EQ(testing::check_xml(render_svg(chart)).problem, "");
}

TEST(BenchTable, CpuRanksAreNotCalledGpus) {
  EXPECT_EQ(bench_chart(rows(), "cpu", "rank").categories[2], "fp32, bucket 2000 MB (2 ranks)");
  EXPECT_NE(bench_markdown(rows(), "rank").find("| configuration | ranks |"), std::string::npos);
}

TEST(BenchTable, RejectsBadRows) {
  EXPECT_THROW(bench_markdown({{"x", "fp32", 1, 0.0, std::nullopt}}), Error);
  EXPECT_THROW(bench_markdown({{"x", "fp32", 0, 1.0, std::nullopt}}), Error);
  EXPECT_THROW(bench_csv({{"x", "fp32", 1, 1.0, -1.0}}), Error);
}

}  // namespace
}  // namespace ddpx

namespace ddpx {
namespace {

TEST(BenchTable, ScalingEfficiencyComparesTheSameModelOnly) {
  const std::vector<BenchRow> rows = {
      {"vit_b_32 fp32", "fp32", 1, 40.0, std::nullopt, "vit_b_32"},
      {"vit_l_32 fp32", "fp32", 1, 10.0, std::nullopt, "vit_l_32"},
      {"vit_l_32 fp32, 2 GPUs", "fp32", 2, 9.5, std::nullopt, "vit_l_32"},
  };
  // Against vit_l_32's own single-GPU 10 steps/s (not vit_b_32's 40): 9.5 / 10.
  EXPECT_DOUBLE_EQ(*scaling_efficiency(rows, 2), 0.95);
}

TEST(BenchTable, ChartDefinesEffAndAddsScalingViewExactlyWhenRankCountsDiffer) {
  const BarChart mixed = bench_chart(rows(), "t");
  EXPECT_NE(mixed.note_legend.find("scaling efficiency"), std::string::npos);
  EXPECT_NE(mixed.note_legend.find("1-GPU"), std::string::npos);
  ASSERT_TRUE(mixed.scaling.has_value());
  ASSERT_EQ(mixed.scaling->points.size(), 4u);
  EXPECT_EQ(mixed.scaling->points[2].ranks, 2);
  EXPECT_DOUBLE_EQ(mixed.scaling->points[2].steps_per_s, 11.25);
  EXPECT_DOUBLE_EQ(*mixed.scaling->points[2].efficiency, 11.25 / 12.5);
  const std::string svg = render_svg(mixed);
  EXPECT_EQ(testing::check_xml(svg).problem, "");
  EXPECT_NE(svg.find("id=\"scaling\""), std::string::npos);
  EXPECT_NE(svg.find("scaling efficiency"), std::string::npos);

  // All rows on one GPU: no efficiency, no legend line for it, no scaling panel.
  std::vector<BenchRow> single = rows();
  single.resize(2);
  const BarChart flat = bench_chart(single, "t");
  EXPECT_EQ(flat.note_legend, "");
  EXPECT_FALSE(flat.scaling.has_value());
  EXPECT_EQ(render_svg(flat).find("id=\"scaling\""), std::string::npos);
  // All rows on two ranks: one rank count, no scaling panel either.
  const std::vector<BenchRow> two = {{"a", "fp32", 2, 3.0, std::nullopt}, {"b", "fp32", 2, 4.0, std::nullopt}};
  EXPECT_FALSE(bench_chart(two, "t", "rank").scaling.has_value());
}

}  // namespace
}  // namespace ddpx
