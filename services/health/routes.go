package health

import "github.com/formsservice/formsservice/services/platform/server"

// Routes declares GET /health, the service's only endpoint. It needs no authentication and shows no
// secrets. It is counted in formsservice_http_requests_total{service="health"}; the results of the
// checks are exported as the formsservice_health_* gauges (metrics.go).
func (s *Service) Routes() []server.Route {
	return []server.Route{server.Get("/health", s.handleHealth)}
}
