// The graph family's channel-vector convolution (kernels_dataset/templates/graph/conv.cpp.j2, compiled in with
// -DKERNEL_SOURCE) against a plain one summing in double, on configurations read from stdin, one a line:
// N C D H W OC KD KH KW OD OH OW sd sh sw pd ph pw dd dh dw G bias. Prints a line for each: "ok" or "bad", the
// largest error relative to the sum of the products' magnitudes, and "wins 0|1" (cv_wins: the path conv3d takes).
// Used by tests/harness/test_conv_channel_vectors.py.
#include KERNEL_SOURCE
#include <cstdio>
#include <random>
int main() {
  int64_t s[22];
  int bias, cfg = 0;
  while (true) {
    for (int i = 0; i < 22; ++i)
      if (scanf("%ld", &s[i]) != 1) return 0;
    if (scanf("%d", &bias) != 1) return 0;
    const int64_t N = s[0], C = s[1], D = s[2], H = s[3], W = s[4], OC = s[5], KD = s[6], KH = s[7], KW = s[8];
    const int64_t OD = s[9], OH = s[10], OW = s[11], G = s[21], Cg = C / G, OCg = OC / G;
    std::vector<float> x(N * C * D * H * W), w(OC * Cg * KD * KH * KW), b(OC), y(N * OC * OD * OH * OW, -7.0f);
    std::mt19937 gen(++cfg);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& v : x) v = u(gen);
    for (auto& v : w) v = u(gen);
    for (auto& v : b) v = u(gen);
    const int rc = conv3d_channel_vectors(x.data(), w.data(), bias ? b.data() : nullptr, y.data(), s, nullptr, nullptr);
    double worst = 0.0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oc = 0; oc < OC; ++oc)
        for (int64_t od = 0; od < OD; ++od)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t g = oc / OCg;
              double acc = bias ? b[oc] : 0.0, mag = std::fabs(acc);
              for (int64_t c = 0; c < Cg; ++c)
                for (int64_t kd = 0; kd < KD; ++kd)
                  for (int64_t kh = 0; kh < KH; ++kh)
                    for (int64_t kw = 0; kw < KW; ++kw) {
                      const int64_t id = od * s[12] - s[15] + kd * s[18], ih = oh * s[13] - s[16] + kh * s[19];
                      const int64_t iw = ow * s[14] - s[17] + kw * s[20];
                      if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                      const double p = (double)x[(((n * C + g * Cg + c) * D + id) * H + ih) * W + iw] *
                                       w[(((oc * Cg + c) * KD + kd) * KH + kh) * KW + kw];
                      acc += p, mag += std::fabs(p);
                    }
              const double got = y[(((n * OC + oc) * OD + od) * OH + oh) * OW + ow];
              worst = std::max(worst, std::fabs(got - acc) / (1.0 + mag));
            }
    printf("%s %.3g wins %d\n", rc == 0 && worst < 1e-5 ? "ok" : "bad", worst, cv_wins(s) ? 1 : 0);
  }
}
